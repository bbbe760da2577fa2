#include "layer_expansion.h"

#include <optional>
#include <unordered_map>

#include "attnrt/config/config_limits.h"
#include "attnrt/core/printable.h"
#include "config_names.h"
#include "core/fail.h"
#include "json_reader.h"
#include "layer_validation.h"
#include "state_layer_reader.h"

namespace attnrt::detail {
namespace {

// An MLA latent of 576 is DeepSeek's kv_lora_rank 512 plus 64 rope dimensions.
constexpr int kDeepSeekLatentWidth = 576;
constexpr int kDeepSeekKVLoraRank = 512;

AttentionType read_attention_type(const json& value, const std::string& path) {
  const std::string name = read_name(value, path, "an attention type", kAttentionTypeNames);
  return *find_attention_type(name);
}

// head_size_v: defaults to head_size; for MLA it is kv_lora_rank, known only for DeepSeek's shape.
int default_head_size_v(const LayerConfig& layer, const std::string& path) {
  if (layer.type != AttentionType::mla) return layer.head_size;
  if (layer.head_size == kDeepSeekLatentWidth) return kDeepSeekKVLoraRank;
  fail("{}: required for mla layers whose head_size is not {}; set it to the model's kv_lora_rank",
       path, kDeepSeekLatentWidth);
}

// Reads one layer object; placeholders are substituted later, once its index is known.
LayerConfig read_layer(const json& entry, const std::string& path) {
  ObjectReader reader(entry, path);
  LayerConfig layer;
  reader.read("name", layer.name);
  if (const json* type = reader.field("type")) {
    layer.type = read_attention_type(*type, reader.path_of("type"));
  }
  reader.read("num_heads", layer.num_heads);
  std::optional<int> num_kv_heads;
  std::optional<int> head_size_v;
  if (const json* value = reader.field("num_kv_heads")) {
    num_kv_heads = read_int(*value, reader.path_of("num_kv_heads"));
  }
  reader.read("head_size", layer.head_size);
  if (const json* value = reader.field("head_size_v")) {
    head_size_v = read_int(*value, reader.path_of("head_size_v"));
  }
  reader.read("sliding_window", layer.sliding_window);
  reader.read("attention_chunk_size", layer.attention_chunk_size);
  reader.read("kv_sharing_target", layer.kv_sharing_target);
  reader.read("backend", layer.backend);
  reader.read("draft", layer.draft);
  if (const json* state = reader.field("state")) {
    if (!layer.is_state_layer()) {
      fail("{}: only mamba and linear_attention layers keep a state, but this is a {} layer",
           reader.path_of("state"), attention_type_name(layer.type));
    }
    layer.state = read_state_layer(*state, reader.path_of("state"), layer.type);
  } else if (layer.is_state_layer()) {
    fail("{}: missing; a {} layer needs its state: the mixer and its dimensions",
         reader.path_of("state"), attention_type_name(layer.type));
  }
  reader.reject_unknown_keys();
  // Checked before a repeat block copies them: 100 000 copies of a huge name would exhaust memory.
  require_name_text(layer.name, reader.path_of("name"));
  require_name_text(layer.kv_sharing_target, reader.path_of("kv_sharing_target"));
  require_name_text(layer.backend, reader.path_of("backend"));

  if (layer.is_state_layer()) return layer;  // no heads: validation refuses any that are set
  const bool mla = layer.type == AttentionType::mla;
  layer.num_kv_heads = num_kv_heads.value_or(mla ? 1 : layer.num_heads);
  layer.head_size_v =
      head_size_v ? *head_size_v : default_head_size_v(layer, reader.path_of("head_size_v"));
  return layer;
}

// Replaces `{i}` with the layer's index and `{r}` with the innermost repetition index.
std::string substitute(std::string_view text, std::size_t index, std::optional<int> repetition,
                       const std::string& path) {
  std::string result;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    if (text[pos] != '{') {
      result += text[pos];
      continue;
    }
    const std::string_view placeholder = text.substr(pos, 3);
    if (placeholder == "{i}") {
      result += std::to_string(index);
    } else if (placeholder == "{r}" && repetition) {
      result += std::to_string(*repetition);
    } else if (placeholder == "{r}") {
      fail("{}: \"{{r}}\" (the repetition index) is only allowed inside a repeat block", path);
    } else {
      fail(
          "{}: \"{}\" has an unknown placeholder at offset {}; use {{i}} (layer index) or {{r}} "
          "(repetition index)",
          path, printable(text), pos);
    }
    pos += 2;
  }
  return result;
}

class LayerExpander {
 public:
  std::vector<LayerConfig> take() { return std::move(layers_); }

  void expand_list(const json& entries, const std::string& path, std::optional<int> repetition,
                   int nesting = 0) {
    const json::array_t& items = read_array(entries, path);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string entry_path = element_path(path, i);
      if (items[i].is_object() && (items[i].contains("repeat") || items[i].contains("layers"))) {
        expand_repeat(items[i], entry_path, nesting + 1);
      } else {
        emit(items[i], entry_path, repetition);
      }
    }
  }

 private:
  void expand_repeat(const json& block, const std::string& path, int nesting) {
    if (nesting > limits::kMaxRepeatNesting) {
      fail("{}: repeat blocks nest more than {} deep; flatten the inner ones", path,
           limits::kMaxRepeatNesting);
    }
    ObjectReader reader(block, path);
    const json* count_value = reader.field("repeat");
    const json* layers = reader.field("layers");
    reader.reject_unknown_keys();
    if (count_value == nullptr) {
      fail("{}: a block of \"layers\" needs a \"repeat\" count", reader.path_of("repeat"));
    }
    const int count = read_int(*count_value, reader.path_of("repeat"));
    if (count < 1) fail("{}: must be a positive integer (got {})", reader.path_of("repeat"), count);
    if (static_cast<std::size_t>(count) > limits::kMaxLayers) {
      fail("{}: {} repetitions would make more than {} layers", reader.path_of("repeat"), count,
           limits::kMaxLayers);
    }
    if (layers == nullptr) {
      fail("{}: missing; a repeat block lists the layers it repeats", reader.path_of("layers"));
    }
    if (layers->is_array() && layers->empty()) {
      fail("{}: a repeat block needs at least one layer", reader.path_of("layers"));
    }
    for (int r = 0; r < count; ++r) expand_list(*layers, reader.path_of("layers"), r, nesting);
  }

  void emit(const json& entry, const std::string& path, std::optional<int> repetition) {
    const std::size_t index = layers_.size();
    if (index >= limits::kMaxLayers) {
      fail("{}: the layers expand to more than {} entries; check the repeat counts", path,
           limits::kMaxLayers);
    }
    // A repeated entry is read once: 100 000 copies of one object parse it once, not each time.
    auto [cached, fresh] = read_layers_.try_emplace(&entry);
    if (fresh) cached->second = read_layer(entry, path);
    LayerConfig layer = cached->second;
    if (layer.name.empty() && !entry.contains("name")) {
      layer.name =
          fmt::format("model.layers.{}.{}", index, layer.is_state_layer() ? "mixer" : "self_attn");
    } else {
      layer.name = substitute(layer.name, index, repetition, child_path(path, "name"));
    }
    layer.kv_sharing_target = substitute(layer.kv_sharing_target, index, repetition,
                                         child_path(path, "kv_sharing_target"));
    layers_.push_back(std::move(layer));
  }

  std::vector<LayerConfig> layers_;
  std::unordered_map<const json*, LayerConfig> read_layers_;  // by JSON object, before placeholders
};

}  // namespace

std::vector<LayerConfig> expand_layers(const json& layers, const std::string& path) {
  LayerExpander expander;
  expander.expand_list(layers, path, std::nullopt);
  return expander.take();
}

}  // namespace attnrt::detail
