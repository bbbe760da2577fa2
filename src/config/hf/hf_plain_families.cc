// Families that are plain attention (full or sliding layers, no MLA, no state) but differ from
// Llama in how their vLLM model file reads heads, head sizes and windows (docs/hf-import.md,
// "Per family"). Their class defaults are filled in before (hf_class_defaults.cc).

#include <fmt/format.h>

#include "hf_family_shape.h"

namespace attnrt::detail {
namespace {

// EXAONE 4 (exaone4.py): layer_types, else sliding unless (i + 1) % sliding_window_pattern == 0;
// no window means no sliding layer. vLLM's own config also accepts a string pattern ("LLLG");
// its layers are not derived here: such a config must list layer_types.
FamilyShape exaone4(const HfFields& fields) {
  return interleaved(fields, {}, [&](int num_layers) -> HfLayerKinds {
    if (read_window(fields) == 0) {
      return all_layers(num_layers, HfLayerKind::full, "sliding_window null: every layer global");
    }
    const nlohmann::json* pattern = fields.get("sliding_window_pattern");
    if (pattern != nullptr && pattern->is_string()) {
      fields.fail_at("sliding_window_pattern",
                     "a string pattern; give layer_types, which EXAONE 4 configs list");
    }
    const int period = fields.int_or("sliding_window_pattern", 4);
    if (period <= 0) fields.fail_at("sliding_window_pattern", "must be positive (got {})", period);
    return sliding_except_every(num_layers, period,
                                fmt::format("sliding_window_pattern {}", period));
  });
}

// OLMo 3 (olmo2.py serves both): the head size is always hidden / heads; without layer_types,
// three sliding layers then a global one (Olmo3Config).
FamilyShape olmo3(const HfFields& fields) {
  return interleaved(fields, {true}, [](int num_layers) {
    return sliding_except_every(num_layers, 4, "layer_types absent: every 4th layer global");
  });
}

// SmolLM3 runs on vLLM's Transformers backend: generic heads, layers named "{i}.attn". Its
// layer_types slide only NoPE layers, and only with use_sliding_window.
FamilyShape smollm3(const HfFields& fields) {
  FamilyShape shape = llama_like(fields, {});
  shape.transformers_backend_names = true;
  if (!fields.has("layer_types") && fields.get_bool("use_sliding_window").value_or(false)) {
    fields.fail_at("use_sliding_window",
                   "true without layer_types; give layer_types (the NoPE layers that slide)");
  }
  return shape;
}

// HunYuan (hunyuan_v1.py): head_dim, else attention_head_dim, else hidden / heads. Cross-layer
// attention (use_cla) reuses the previous layer's K and V through a layer kind vLLM gives no
// cache spec: refused.
FamilyShape hunyuan(const HfFields& fields) {
  if (fields.get_bool("use_cla").value_or(false)) {
    fields.fail_at("use_cla", "cross-layer attention is a layer kind vLLM cannot plan a cache for");
  }
  FamilyShape shape = llama_like(fields, {});
  if (!fields.has("head_dim")) {
    if (const std::optional<int> head = fields.get_int("attention_head_dim")) {
      shape.heads.head_size = *head;
      shape.heads.decided_by += " (attention_head_dim)";
    }
  }
  return shape;
}

// Seed-OSS (seed_oss.py) reads head_dim without a fallback.
FamilyShape seed_oss(const HfFields& fields) {
  if (!fields.has("head_dim")) fields.fail_at("head_dim", "missing; vLLM's Seed-OSS requires it");
  return llama_like(fields, {});
}

}  // namespace

void add_plain_family_rules(std::map<std::string_view, FamilyRule>& rules) {
  // head_dim when given, else hidden / heads; model-level window only.
  const auto llama = [](const HfFields& f) { return llama_like(f, {}); };
  for (const char* type :
       {"glm4", "glm4_moe", "minimax_m2", "granite", "ernie4_5", "ernie4_5_moe"}) {
    rules[type] = llama;
  }
  // The vLLM model file always derives the head size (olmo2.py, granitemoe.py).
  for (const char* type : {"olmo2", "granitemoe"}) {
    rules[type] = [](const HfFields& f) { return llama_like(f, {true}); };
  }
  rules["olmo3"] = olmo3;
  rules["exaone4"] = exaone4;
  rules["smollm3"] = smollm3;
  rules["hunyuan_v1_dense"] = hunyuan;
  rules["hunyuan_v1_moe"] = hunyuan;
  rules["seed_oss"] = seed_oss;
}

}  // namespace attnrt::detail
