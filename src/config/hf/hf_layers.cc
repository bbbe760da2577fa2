// Family by family, the attention layers vLLM builds from a config (docs/hf-import.md has the
// table with the sources). Each family picks its layer kinds, windows, heads and sharing; the
// common code then names and records the layers.

#include "hf_layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>

#include "attnrt/config/config_limits.h"
#include "core/fail.h"
#include "hf_family_shape.h"
#include "hf_layer_rules.h"

namespace attnrt::detail {

int num_layers_of(const HfFields& fields) {
  const int layers = fields.require_int("num_hidden_layers");
  if (layers <= 0 || static_cast<std::size_t>(layers) > limits::kMaxLayers) {
    fields.fail_at("num_hidden_layers", "{} is outside [1, {}]", layers, limits::kMaxLayers);
  }
  return layers;
}

HfLayerKinds all_layers(int num_layers, HfLayerKind kind, std::string decided_by) {
  return {std::vector<HfLayerKind>(static_cast<std::size_t>(num_layers), kind),
          std::move(decided_by)};
}

FamilyShape llama_like(const HfFields& fields, HfFamilyDefaults defaults) {
  const int num_layers = num_layers_of(fields);
  FamilyShape shape;
  shape.heads = read_hf_heads(fields, defaults);
  shape.window = read_window(fields);
  std::optional<HfLayerKinds> kinds = read_layer_types(fields, num_layers);
  const bool interleaved = kinds && std::ranges::any_of(kinds->kinds, [&](HfLayerKind kind) {
                             return kind != kinds->kinds.front();
                           });
  // Without a per-layer window, vLLM's model-level one applies to every layer.
  if (!interleaved && shape.window > 0) {
    shape.kinds = all_layers(
        num_layers, HfLayerKind::sliding,
        kinds ? "one layer type, sliding_window set: vLLM's model-level window slides every layer"
              : "sliding_window (every layer)");
    return shape;
  }
  shape.kinds =
      kinds ? std::move(*kinds) : all_layers(num_layers, HfLayerKind::full, "no sliding_window");
  return shape;
}

namespace {

// Qwen2/2.5, Qwen3, Qwen3-MoE: a window only with use_sliding_window, on layers from
// max_window_layers on (transformers' derived layer_types).
FamilyShape qwen(const HfFields& fields, HfFamilyDefaults defaults) {
  const int num_layers = num_layers_of(fields);
  FamilyShape shape;
  shape.heads = read_hf_heads(fields, defaults);
  const bool use_window = fields.get_bool("use_sliding_window").value_or(false);
  shape.window = use_window ? read_window(fields) : 0;
  if (auto kinds = read_layer_types(fields, num_layers)) {
    shape.kinds = std::move(*kinds);
  } else if (shape.window > 0) {
    const int first = fields.int_or("max_window_layers", 28);
    shape.kinds = all_layers(num_layers, HfLayerKind::full,
                             fmt::format("use_sliding_window, max_window_layers {}", first));
    for (int i = std::max(first, 0); i < num_layers; ++i)
      shape.kinds.kinds[i] = HfLayerKind::sliding;
  } else {
    shape.kinds = all_layers(num_layers, HfLayerKind::full, "use_sliding_window false");
  }
  if (!use_window && fields.has("sliding_window")) {
    shape.notes.push_back("sliding_window ignored: use_sliding_window is false");
  }
  return shape;
}

}  // namespace

FamilyShape interleaved(const HfFields& fields, HfFamilyDefaults defaults,
                        const std::function<HfLayerKinds(int)>& derive) {
  const int num_layers = num_layers_of(fields);
  FamilyShape shape;
  shape.heads = read_hf_heads(fields, defaults);
  shape.window = read_window(fields);
  auto kinds = read_layer_types(fields, num_layers);
  shape.kinds = kinds ? std::move(*kinds) : derive(num_layers);
  return shape;
}

namespace {

HfLayerKinds pattern_kinds(const HfFields& fields, int num_layers, int period_default) {
  const std::optional<int> period = fields.get_int("sliding_window_pattern");
  if (period && *period <= 0) {
    fields.fail_at("sliding_window_pattern", "must be positive (got {})", *period);
  }
  return sliding_except_every(
      num_layers, period.value_or(period_default),
      period ? fmt::format("sliding_window_pattern {}", *period)
             : fmt::format("sliding_window_pattern absent: default {}", period_default));
}

FamilyShape gemma4(const HfFields& fields) {
  // Gemma4TextConfig without layer_types: every 6th layer global, and the last one always.
  FamilyShape shape = interleaved(fields, {}, [](int num_layers) {
    HfLayerKinds kinds = sliding_except_every(
        num_layers, 6, "layer_types absent: every 6th layer and the last global");
    kinds.kinds.back() = HfLayerKind::full;
    return kinds;
  });
  if (shape.window == 0 &&
      std::ranges::find(shape.kinds.kinds, HfLayerKind::sliding) != shape.kinds.kinds.end()) {
    fields.fail_at("sliding_window", "missing, but layer_types lists sliding_attention layers");
  }
  const bool k_eq_v = fields.get_bool("attention_k_eq_v").value_or(false);
  HfHeads full = shape.heads;
  if (const std::optional<int> global = fields.get_int("global_head_dim")) full.head_size = *global;
  // vLLM's gemma4.py: num_global_key_value_heads counts only when K == V.
  const std::optional<int> global_kv = fields.get_int("num_global_key_value_heads");
  if (k_eq_v && global_kv) full.num_kv_heads = *global_kv;
  full.decided_by = fmt::format(
      "num_attention_heads, {}, {}",
      k_eq_v && global_kv ? "num_global_key_value_heads (attention_k_eq_v)" : "num_key_value_heads",
      fields.has("global_head_dim") ? "global_head_dim" : "head_dim");
  shape.full_heads = full;
  shape.full_v_copies_k = k_eq_v;
  shape.num_shared = fields.int_or("num_kv_shared_layers", 0);
  return shape;
}

FamilyShape gpt_oss(const HfFields& fields) {
  const int num_layers = num_layers_of(fields);
  FamilyShape shape;
  shape.heads = read_hf_heads(fields, {});
  shape.window = read_window(fields);
  // vLLM's gpt_oss.py slides on even layers and does not read layer_types.
  shape.kinds = all_layers(num_layers, HfLayerKind::full, "layer index % 2 == 0 slides (vLLM)");
  if (shape.window > 0) {
    for (int i = 0; i < num_layers; i += 2) shape.kinds.kinds[i] = HfLayerKind::sliding;
  }
  shape.attention_module = "attn";
  shape.notes.push_back("attention sinks (per-head parameters) change the kernel, not the cache");
  return shape;
}

FamilyShape llama4(const HfFields& fields) {
  const int num_layers = num_layers_of(fields);
  FamilyShape shape;
  shape.heads = read_hf_heads(fields, {});
  shape.chunk =
      fields.is_null("attention_chunk_size") ? 0 : fields.int_or("attention_chunk_size", 8192);
  std::vector<int> rope = fields.int_list("no_rope_layers");
  std::string source = "no_rope_layers";
  if (rope.empty()) {
    const int interval = fields.int_or("no_rope_layer_interval", 4);
    if (interval <= 0) fields.fail_at("no_rope_layer_interval", "must be positive");
    for (int i = 0; i < num_layers; ++i) rope.push_back((i + 1) % interval != 0 ? 1 : 0);
    source = fmt::format("no_rope_layers derived (interval {})", interval);
  }
  if (static_cast<int>(rope.size()) != num_layers) {
    fields.fail_at("no_rope_layers", "{} entries, but num_hidden_layers is {}", rope.size(),
                   num_layers);
  }
  // RoPE layers attend within their chunk; NoPE layers are global (vLLM's llama4.py).
  shape.kinds = all_layers(num_layers, HfLayerKind::full, source + ", attention_chunk_size");
  for (int i = 0; i < num_layers; ++i) {
    if (rope[i] != 0 && shape.chunk > 0) shape.kinds.kinds[i] = HfLayerKind::chunked;
  }
  return shape;
}

const std::map<std::string_view, FamilyRule>& family_rules() {
  static const std::map<std::string_view, FamilyRule> rules = [] {
    std::map<std::string_view, FamilyRule> r;
    const auto llama = [](const HfFields& f) { return llama_like(f, {}); };
    r["llama"] = llama;
    r["mistral"] = llama;
    r["mixtral"] = llama;
    r["phi3"] = llama;
    for (const char* type : {"qwen2", "qwen2_moe"}) {
      r[type] = [](const HfFields& f) { return qwen(f, {true}); };
    }
    for (const char* type : {"qwen3", "qwen3_moe"}) {
      r[type] = [](const HfFields& f) { return qwen(f, {}); };
    }
    r["gemma2"] = [](const HfFields& f) {
      return interleaved(f, {}, [](int n) {
        HfLayerKinds k = sliding_except_every(n, 2, "layer_types absent: even layers slide");
        return k;
      });
    };
    r["gemma3_text"] = [](const HfFields& f) {
      return interleaved(f, {}, [&](int n) { return pattern_kinds(f, n, 6); });
    };
    r["gemma3n_text"] = [](const HfFields& f) {
      FamilyShape shape = interleaved(f, {}, [](int n) {
        return sliding_except_every(n, 5, "layer_types absent: every 5th layer global");
      });
      shape.num_shared = f.int_or("num_kv_shared_layers", 0);
      return shape;
    };
    r["cohere2"] = [](const HfFields& f) {
      return interleaved(f, {true}, [&](int n) { return pattern_kinds(f, n, 4); });
    };
    r["gemma4_text"] = gemma4;
    r["gpt_oss"] = gpt_oss;
    r["llama4_text"] = llama4;
    add_plain_family_rules(r);
    return r;
  }();
  return rules;
}

// Hybrid models whose state layers the importer does not map (yet).
constexpr std::array<std::string_view, 9> kHybridModelTypes = {
    "falcon_h1",       "zamba2", "bamba", "mamba",      "mamba2",
    "minimax_text_01", "plamo2", "lfm2",  "kimi_linear"};
// Hybrid models it maps (hf_state_layers.cc).
constexpr std::array<std::string_view, 6> kMappedHybridModelTypes = {
    "granitemoehybrid", "jamba", "nemotron_h", "qwen3_5_moe_text", "qwen3_5_text", "qwen3_next"};

}  // namespace

bool is_hybrid_hf_model_type(std::string_view model_type) {
  return std::ranges::find(kHybridModelTypes, model_type) != kHybridModelTypes.end();
}

std::vector<std::string_view> supported_hf_model_types() {
  std::vector<std::string_view> types;
  for (const auto& entry : family_rules()) types.push_back(entry.first);
  for (const std::string_view extra : {"deepseek_v2", "deepseek_v3", "kimi_k2", "whisper"}) {
    types.push_back(extra);
  }
  types.insert(types.end(), kMappedHybridModelTypes.begin(), kMappedHybridModelTypes.end());
  std::ranges::sort(types);
  return types;
}

namespace {

AttentionType attention_type_of(HfLayerKind kind) {
  switch (kind) {
    case HfLayerKind::sliding:
      return AttentionType::sliding_window;
    case HfLayerKind::chunked:
      return AttentionType::chunked_local;
    case HfLayerKind::full:
      break;
  }
  return AttentionType::full;
}

std::vector<HfLayer> build_layers(const HfFields& fields, const FamilyShape& shape,
                                  std::string_view prefix, const std::vector<int>& targets) {
  std::vector<HfLayer> layers;
  for (std::size_t i = 0; i < shape.kinds.kinds.size(); ++i) {
    const HfLayerKind kind = shape.kinds.kinds[i];
    const bool full = kind == HfLayerKind::full;
    const HfHeads& heads = full && shape.full_heads ? *shape.full_heads : shape.heads;
    std::string decided_by = fmt::format("{}, {}", shape.kinds.decided_by, heads.decided_by);
    if (kind == HfLayerKind::sliding) {
      if (shape.window <= 0) {
        fields.fail_at("sliding_window",
                       "layer {} is a sliding layer, but the config gives it no window (for Qwen: "
                       "use_sliding_window is false)",
                       i);
      }
      decided_by += ", sliding_window";
    }
    std::string name = shape.transformers_backend_names
                           ? fmt::format("{}.attn", i)
                           : fmt::format("{}.layers.{}.{}.attn", prefix, i, shape.attention_module);
    HfLayer layer = make_layer(std::move(name), attention_type_of(kind), heads, heads.head_size,
                               std::move(decided_by));
    layer.sliding_window = kind == HfLayerKind::sliding ? shape.window : 0;
    layer.attention_chunk_size = kind == HfLayerKind::chunked ? shape.chunk : 0;
    layer.v_copies_k = full && shape.full_v_copies_k;
    layer.shares_with = targets[i];
    if (layer.shares_with >= 0) layer.decided_by += ", num_kv_shared_layers";
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace

HfLayerSet map_deepseek_layers(const HfFields& fields, std::string_view prefix);
HfLayerSet map_whisper_layers(const HfFields& fields);

HfLayerSet map_hf_layers(const HfFields& fields, std::string_view prefix) {
  const std::string& type = fields.model_type();
  if (type == "deepseek_v2" || type == "deepseek_v3" || type == "kimi_k2") {
    return map_deepseek_layers(fields, prefix);
  }
  if (type == "whisper") return map_whisper_layers(fields);
  if (std::ranges::find(kMappedHybridModelTypes, type) != kMappedHybridModelTypes.end()) {
    return map_hybrid_layers(fields, prefix);
  }
  const auto rule = family_rules().find(type);
  if (rule == family_rules().end()) fail("{}: not a model type the importer maps", type);
  FamilyShape shape = rule->second(fields);
  const std::vector<int> targets = kv_sharing_targets(fields, shape.kinds.kinds, shape.num_shared);
  HfLayerSet set;
  set.layers = build_layers(fields, shape, prefix, targets);
  set.notes = std::move(shape.notes);
  return set;
}

}  // namespace attnrt::detail
