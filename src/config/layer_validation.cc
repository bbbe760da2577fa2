#include "layer_validation.h"

#include <algorithm>
#include <map>
#include <string>
#include <variant>

#include "attnrt/config/config_limits.h"
#include "attnrt/core/printable.h"
#include "config_names.h"
#include "core/fail.h"
#include "range_checks.h"

namespace attnrt::detail {
namespace {

std::string field_path(std::size_t index, std::string_view field) {
  return fmt::format("model.layers[{}].{}", index, field);
}

void require_positive(int value, std::size_t index, std::string_view field, int high) {
  require_range(value, 1, high, field_path(index, field));
}

// A window or chunk size belongs to exactly the layer type that uses it.
void check_type_specific_size(const LayerConfig& layer, std::size_t index, std::string_view field,
                              int value, AttentionType owner) {
  if (layer.type == owner && value <= 0) {
    fail("{}: required for {} layers; must be a positive integer (got {})",
         field_path(index, field), attention_type_name(owner), value);
  }
  if (layer.type == owner) require_range(value, 1, limits::kMaxWindow, field_path(index, field));
  if (layer.type != owner && value != 0) {
    fail("{}: only {} layers take a {}, but this is a {} layer", field_path(index, field),
         attention_type_name(owner), field, attention_type_name(layer.type));
  }
}

void check_heads(const LayerConfig& layer, std::size_t index) {
  require_positive(layer.num_heads, index, "num_heads", limits::kMaxHeads);
  require_positive(layer.head_size, index, "head_size", limits::kMaxHeadSize);
  if (layer.type == AttentionType::mla) {
    if (layer.num_kv_heads != 1) {
      fail(
          "{}: an mla layer caches one latent vector per token, so num_kv_heads must be 1 (got {})",
          field_path(index, "num_kv_heads"), layer.num_kv_heads);
    }
    if (layer.head_size_v < 0 || layer.head_size_v >= layer.head_size) {
      fail("{}: for an mla layer this is kv_lora_rank and must be below head_size {} (got {})",
           field_path(index, "head_size_v"), layer.head_size, layer.head_size_v);
    }
    return;
  }
  require_positive(layer.num_kv_heads, index, "num_kv_heads", limits::kMaxHeads);
  require_positive(layer.head_size_v, index, "head_size_v", limits::kMaxHeadSize);
  if (layer.num_heads % layer.num_kv_heads != 0) {
    fail("{}: num_heads {} must be a multiple of num_kv_heads {}",
         field_path(index, "num_kv_heads"), layer.num_heads, layer.num_kv_heads);
  }
}

// Query heads split evenly across ranks; KV heads split evenly or are replicated.
void check_tensor_parallel(const LayerConfig& layer, std::size_t index, int tp) {
  if (layer.num_heads % tp != 0) {
    fail("{}: {} query heads cannot be split evenly across parallel.tensor_parallel_size {}",
         field_path(index, "num_heads"), layer.num_heads, tp);
  }
  const int kv = layer.num_kv_heads;
  if (layer.type != AttentionType::mla && kv > 0 && (kv >= tp ? kv % tp : tp % kv) != 0) {
    fail(
        "{}: {} KV heads can be neither split evenly nor replicated across "
        "parallel.tensor_parallel_size {}",
        field_path(index, "num_kv_heads"), kv, tp);
  }
}

// The dimensions of a state layer's mixer, each within its documented range. Whether they divide
// among the tensor-parallel ranks is checked when the layer is planned (kv/state_shapes.h).
void check_state_dims(const Mamba1Dims& dims, const std::string& path) {
  require_range(dims.intermediate_size, 1, limits::kMaxStateDim, path + ".intermediate_size");
  require_range(dims.state_size, 1, limits::kMaxStateDim, path + ".state_size");
  require_range(dims.conv_kernel, 2, limits::kMaxConvKernel, path + ".conv_kernel");
}

void check_state_dims(const Mamba2Dims& dims, const std::string& path) {
  require_range(dims.intermediate_size, 1, limits::kMaxStateDim, path + ".intermediate_size");
  require_range(dims.n_groups, 1, limits::kMaxStateDim, path + ".n_groups");
  require_range(dims.num_heads, 1, limits::kMaxStateDim, path + ".num_heads");
  require_range(dims.head_dim, 1, limits::kMaxStateDim, path + ".head_dim");
  require_range(dims.state_size, 1, limits::kMaxStateDim, path + ".state_size");
  require_range(dims.conv_kernel, 2, limits::kMaxConvKernel, path + ".conv_kernel");
}

void check_state_dims(const GatedDeltaNetDims& dims, const std::string& path) {
  require_range(dims.num_k_heads, 1, limits::kMaxStateDim, path + ".num_k_heads");
  require_range(dims.num_v_heads, 1, limits::kMaxStateDim, path + ".num_v_heads");
  require_range(dims.head_k_dim, 1, limits::kMaxStateDim, path + ".head_k_dim");
  require_range(dims.head_v_dim, 1, limits::kMaxStateDim, path + ".head_v_dim");
  require_range(dims.conv_kernel, 2, limits::kMaxConvKernel, path + ".conv_kernel");
}

void check_state_dims(const ShortConvDims& dims, const std::string& path) {
  require_range(dims.intermediate_size, 1, limits::kMaxStateDim, path + ".intermediate_size");
  require_range(dims.conv_kernel, 2, limits::kMaxConvKernel, path + ".conv_kernel");
}

// A state layer has its state and nothing of an attention layer: no heads, window, backend or
// KV-sharing target (SEMANTICS §4.4).
void check_state_layer(const LayerConfig& layer, std::size_t index) {
  if (!layer.state) {
    fail("{}: missing; a {} layer needs its state: the mixer and its dimensions",
         field_path(index, "state"), attention_type_name(layer.type));
  }
  const std::pair<std::string_view, int> attention_fields[] = {
      {"num_heads", layer.num_heads},
      {"num_kv_heads", layer.num_kv_heads},
      {"head_size", layer.head_size},
      {"head_size_v", layer.head_size_v},
      {"sliding_window", layer.sliding_window},
      {"attention_chunk_size", layer.attention_chunk_size}};
  for (const auto& [field, value] : attention_fields) {
    if (value == 0) continue;
    fail("{}: a {} layer keeps a recurrent state and takes no {}; its sizes go in \"state\"",
         field_path(index, field), attention_type_name(layer.type), field);
  }
  if (!layer.backend.empty()) {
    fail("{}: a {} layer takes no attention backend (the plan sizes its state; nothing runs it)",
         field_path(index, "backend"), attention_type_name(layer.type));
  }
  if (layer.shares_kv()) {
    fail("{}: a {} layer keeps its own state per request and cannot share a KV cache",
         field_path(index, "kv_sharing_target"), attention_type_name(layer.type));
  }
  const std::string path = field_path(index, "state");
  std::visit([&path](const auto& dims) { check_state_dims(dims, path); }, layer.state->dims);
}

void check_layer_fields(const LayerConfig& layer, std::size_t index, const EngineConfig& config) {
  if (layer.name.empty()) fail("{}: must not be empty", field_path(index, "name"));
  require_name_text(layer.name, field_path(index, "name"));
  require_name_text(layer.kv_sharing_target, field_path(index, "kv_sharing_target"));
  require_name_text(layer.backend, field_path(index, "backend"));
  if (layer.is_state_layer()) {
    check_state_layer(layer, index);
    return;
  }
  if (layer.state) {
    fail("{}: only mamba and linear_attention layers keep a state, but this is a {} layer",
         field_path(index, "state"), attention_type_name(layer.type));
  }
  check_heads(layer, index);
  check_type_specific_size(layer, index, "sliding_window", layer.sliding_window,
                           AttentionType::sliding_window);
  check_type_specific_size(layer, index, "attention_chunk_size", layer.attention_chunk_size,
                           AttentionType::chunked_local);
  check_tensor_parallel(layer, index, config.parallel.tensor_parallel_size);
  // layer.backend is resolved, with this path, by the backend registry at planning time.
}

// A sharing layer reads the target's cache as its own: same kind of cache, same shape.
void check_compatible_target(const LayerConfig& layer, const LayerConfig& target,
                             const std::string& path) {
  if (target.type == AttentionType::encoder_only) {
    fail("{}: \"{}\" is an encoder_only layer and has no KV cache to share", path, target.name);
  }
  if (target.is_state_layer()) {
    fail("{}: \"{}\" is a {} layer, whose per-request state cannot be shared", path, target.name,
         attention_type_name(target.type));
  }
  if (target.type != layer.type) {
    fail(
        "{}: \"{}\" is a {} layer but \"{}\" is a {} layer; a layer may only share the KV cache of "
        "a layer of the same attention type",
        path, target.name, attention_type_name(target.type), layer.name,
        attention_type_name(layer.type));
  }
  if (target.num_kv_heads != layer.num_kv_heads || target.head_size != layer.head_size ||
      target.head_size_v != layer.head_size_v) {
    fail(
        "{}: the KV shapes must match, but \"{}\" has num_kv_heads {}, head_size {}, "
        "head_size_v {} and \"{}\" has {}, {}, {}",
        path, target.name, target.num_kv_heads, target.head_size, target.head_size_v, layer.name,
        layer.num_kv_heads, layer.head_size, layer.head_size_v);
  }
  if (target.sliding_window != layer.sliding_window ||
      target.attention_chunk_size != layer.attention_chunk_size) {
    fail("{}: \"{}\" keeps a window of {} tokens but \"{}\" needs {}; the window sizes must match",
         path, target.name, std::max(target.sliding_window, target.attention_chunk_size),
         layer.name, std::max(layer.sliding_window, layer.attention_chunk_size));
  }
}

void check_kv_sharing(const std::vector<LayerConfig>& layers, std::size_t index,
                      const std::map<std::string_view, std::size_t>& index_of) {
  const LayerConfig& layer = layers[index];
  if (!layer.shares_kv()) return;
  const std::string path = field_path(index, "kv_sharing_target");
  const std::string& name = layer.kv_sharing_target;
  if (layer.type == AttentionType::encoder_only) {
    fail("{}: \"{}\" is an encoder_only layer, which has no KV cache, so it cannot share one", path,
         layer.name);
  }
  const auto found = index_of.find(name);
  if (found == index_of.end()) {
    fail("{}: \"{}\" is not a valid Attention layer in the model", path, name);
  }
  const std::size_t target_index = found->second;
  if (target_index == index) fail("{}: \"{}\" cannot be the same as the current layer", path, name);
  if (target_index > index) {
    fail("{}: \"{}\" must come before the current layer \"{}\"", path, name, layer.name);
  }
  const LayerConfig& target = layers[target_index];
  if (target.shares_kv()) {
    fail(
        "{}: \"{}\" itself shares the KV cache of \"{}\" (chain \"{}\" -> \"{}\" -> \"{}\"); point "
        "kv_sharing_target at the owning layer \"{}\"",
        path, name, target.kv_sharing_target, layer.name, name, target.kv_sharing_target,
        target.kv_sharing_target);
  }
  check_compatible_target(layer, target, path);
}

// Draft layers run after the target model's layers (SEMANTICS §7.6 walks them from the end).
void check_draft_placement(const std::vector<LayerConfig>& layers) {
  const auto first_draft =
      std::find_if(layers.begin(), layers.end(), [](const LayerConfig& l) { return l.draft; });
  const auto late_target =
      std::find_if(first_draft, layers.end(), [](const LayerConfig& l) { return !l.draft; });
  if (late_target == layers.end()) return;
  fail(
      "{}: draft layer \"{}\" comes before target layer \"{}\" (model.layers[{}]); every draft "
      "layer "
      "must follow every non-draft layer",
      field_path(static_cast<std::size_t>(first_draft - layers.begin()), "draft"),
      first_draft->name, late_target->name, late_target - layers.begin());
}

}  // namespace

void require_name_text(std::string_view name, std::string_view path) {
  if (name.size() > limits::kMaxNameBytes) {
    fail("{}: {} bytes is too long for a name (at most {})", path, name.size(),
         limits::kMaxNameBytes);
  }
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      fail("{}: \"{}\" contains the control character \\x{:02x}; names are printable text", path,
           printable(name), byte);
    }
  }
  if (!is_printable(name)) {
    fail("{}: \"{}\" is not valid UTF-8; names are printable text", path, printable(name));
  }
}

void validate_layers(const EngineConfig& config) {
  const std::vector<LayerConfig>& layers = config.model.layers;
  if (layers.empty()) {
    fail("model.layers: the model has no layers; list at least one attention layer");
  }
  std::map<std::string_view, std::size_t> index_of;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    check_layer_fields(layers[i], i, config);
    const auto [existing, inserted] = index_of.emplace(layers[i].name, i);
    if (!inserted) {
      fail("{}: \"{}\" is already the name of model.layers[{}]; layer names must be unique",
           field_path(i, "name"), layers[i].name, existing->second);
    }
  }
  for (std::size_t i = 0; i < layers.size(); ++i) check_kv_sharing(layers, i, index_of);
  check_draft_placement(layers);
}

}  // namespace attnrt::detail
