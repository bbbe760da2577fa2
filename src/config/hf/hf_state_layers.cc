// The hybrid families (SEMANTICS §4.4, docs/hf-import.md): attention layers interleaved with
// Mamba or Gated DeltaNet layers that keep a recurrent state per request. Each family says which
// decoder layers are which and reads its mixer's dimensions; layer names follow vLLM's modules.

#include <fmt/format.h>

#include "attnrt/core/printable.h"
#include "hf_layer_rules.h"
#include "hf_layers.h"

namespace attnrt::detail {
namespace {

enum class DecoderLayer { attention, state, none };  // none: an MLP or MoE block, no cache

struct HybridShape {
  std::vector<DecoderLayer> layers;
  std::string decided_by;  // which field decided the layer kinds
};

int positive_field(const HfFields& fields, std::string_view key, int fallback) {
  const int value = fields.int_or(key, fallback);
  if (value <= 0) fields.fail_at(key, "must be positive (got {})", value);
  return value;
}

// A state dtype field: float32, bfloat16 or float16.
DType read_state_dtype(const HfFields& fields, std::string_view key, const std::string& name) {
  if (name != "float32" && name != "bfloat16" && name != "float16") {
    fields.fail_at(key, "\"{}\" is not float32, bfloat16 or float16", printable(name, 40));
  }
  return parse_dtype(name);
}

int num_layers_of(const HfFields& fields) {
  return positive_field(fields, "num_hidden_layers", 0);
}

// hidden_size × mamba_expand: the width of a Mamba mixer (Jamba, Granite 4).
std::int64_t expanded_width(const HfFields& fields, std::string_view expand_key) {
  return std::int64_t{positive_field(fields, "hidden_size", 0)} *
         positive_field(fields, expand_key, 2);
}

// `layer_types` with its attention and state spellings; nullopt when the config has none.
std::optional<HybridShape> shape_of_layer_types(const HfFields& fields, int num_layers,
                                                std::string_view attention,
                                                std::string_view state) {
  const std::optional<std::vector<std::string>> listed = read_layer_type_names(fields, num_layers);
  if (!listed) return std::nullopt;
  const std::vector<std::string>& types = *listed;
  HybridShape shape{{}, "layer_types"};
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] != attention && types[i] != state) {
      fields.fail_at("layer_types", "entry {} is \"{}\"; expected {} or {}", i,
                     printable(types[i], 60), state, attention);
    }
    shape.layers.push_back(types[i] == attention ? DecoderLayer::attention : DecoderLayer::state);
  }
  return shape;
}

// Layer i of the model, named as vLLM registers its module.
struct Names {
  std::string prefix;            // "model"
  std::string attention_module;  // "self_attn.attn"
  std::string state_module;      // "mamba"
  std::string name(int i, DecoderLayer kind) const {
    return fmt::format("{}.layers.{}.{}", prefix, i,
                       kind == DecoderLayer::attention ? attention_module : state_module);
  }
};

HfLayerSet build(const HybridShape& shape, const Names& names, const HfHeads& heads,
                 AttentionType state_type, const StateLayerConfig& state,
                 std::string state_decided_by) {
  HfLayerSet set;
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const DecoderLayer kind = shape.layers[i];
    if (kind == DecoderLayer::none) continue;
    const std::string name = names.name(static_cast<int>(i), kind);
    if (kind == DecoderLayer::attention) {
      set.layers.push_back(make_layer(name, AttentionType::full, heads, heads.head_size,
                                      fmt::format("{}, {}", shape.decided_by, heads.decided_by)));
      continue;
    }
    HfLayer layer = make_layer(name, state_type, HfHeads{0, 0, 0, {}}, 0,
                               fmt::format("{}, {}", shape.decided_by, state_decided_by));
    layer.state = state;
    set.layers.push_back(std::move(layer));
  }
  return set;
}

// Jamba: attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere.
HfLayerSet jamba(const HfFields& fields, std::string_view prefix) {
  const int period = positive_field(fields, "attn_layer_period", 8);
  const int offset = fields.int_or("attn_layer_offset", 4);
  if (offset < 0 || offset >= period) {
    fields.fail_at("attn_layer_offset", "{} is outside [0, attn_layer_period {})", offset, period);
  }
  HybridShape shape{{}, fmt::format("attn_layer_period {}, attn_layer_offset {}", period, offset)};
  for (int i = 0; i < num_layers_of(fields); ++i) {
    shape.layers.push_back(i % period == offset ? DecoderLayer::attention : DecoderLayer::state);
  }
  StateLayerConfig state;
  state.dims = Mamba1Dims{expanded_width(fields, "mamba_expand"),
                          positive_field(fields, "mamba_d_state", 16),
                          positive_field(fields, "mamba_d_conv", 4)};
  // vLLM's jamba.py registers attention without a self_attn level, and the mixer as `mixer`.
  return build(shape, {std::string(prefix), "attn", "mixer"}, read_hf_heads(fields, {true}),
               AttentionType::mamba, state,
               "Mamba-1: hidden_size x mamba_expand, mamba_d_state, mamba_d_conv");
}

// Granite 4: `layer_types` of "mamba" / "attention" (all Mamba when absent).
HfLayerSet granite4(const HfFields& fields, std::string_view prefix) {
  const int num_layers = num_layers_of(fields);
  HybridShape shape{
      std::vector<DecoderLayer>(static_cast<std::size_t>(num_layers), DecoderLayer::state),
      "layer_types absent: every layer is Mamba"};
  if (auto listed = shape_of_layer_types(fields, num_layers, "attention", "mamba")) {
    shape = std::move(*listed);
  }
  const std::int64_t width = expanded_width(fields, "mamba_expand");
  const int num_heads = positive_field(fields, "mamba_n_heads", 128);
  Mamba2Dims dims;
  dims.intermediate_size = width;
  dims.n_groups = positive_field(fields, "mamba_n_groups", 1);
  dims.num_heads = num_heads;
  dims.head_dim = fields.get_int("mamba_d_head").value_or(static_cast<int>(width / num_heads));
  dims.state_size = positive_field(fields, "mamba_d_state", 256);
  dims.conv_kernel = positive_field(fields, "mamba_d_conv", 4);
  StateLayerConfig state;
  state.dims = dims;
  return build(shape, {std::string(prefix), "self_attn.attn", "mixer"},
               read_hf_heads(fields, {true}), AttentionType::mamba, state,
               "Mamba-2: hidden_size x mamba_expand, mamba_n_groups, mamba_n_heads, mamba_d_head, "
               "mamba_d_state, mamba_d_conv");
}

// Nemotron-H: one character per layer of hybrid_override_pattern: M Mamba-2, * attention, - MLP,
// E MoE.
HfLayerSet nemotron_h(const HfFields& fields, std::string_view prefix) {
  const std::optional<std::string> pattern = fields.get_string("hybrid_override_pattern");
  if (!pattern) fields.fail_at("hybrid_override_pattern", "missing; it lists the layer kinds");
  const int num_layers = num_layers_of(fields);
  if (static_cast<int>(pattern->size()) != num_layers) {
    fields.fail_at("hybrid_override_pattern", "{} characters, but num_hidden_layers is {}",
                   pattern->size(), num_layers);
  }
  HybridShape shape{{}, "hybrid_override_pattern"};
  for (std::size_t i = 0; i < pattern->size(); ++i) {
    const char c = (*pattern)[i];
    if (c != 'M' && c != '*' && c != '-' && c != 'E') {
      fields.fail_at("hybrid_override_pattern",
                     "character {} is '{}'; expected M (Mamba), * (attention), - (MLP) or E (MoE)",
                     i, std::string(1, c));
    }
    shape.layers.push_back(c == 'M'   ? DecoderLayer::state
                           : c == '*' ? DecoderLayer::attention
                                      : DecoderLayer::none);
  }
  const int num_heads = positive_field(fields, "mamba_num_heads", 128);
  const int head_dim = positive_field(fields, "mamba_head_dim", 64);
  Mamba2Dims dims;
  dims.intermediate_size = std::int64_t{num_heads} * head_dim;
  dims.n_groups = positive_field(fields, "n_groups", 8);
  dims.num_heads = num_heads;
  dims.head_dim = head_dim;
  dims.state_size = positive_field(fields, "ssm_state_size", 128);
  dims.conv_kernel = positive_field(fields, "conv_kernel", 4);
  StateLayerConfig state;
  state.dims = dims;
  HfHeads heads = read_hf_heads(fields, {});
  if (const std::optional<int> width = fields.get_int("attention_head_dim")) {
    heads.head_size = *width;
    heads.decided_by = "num_attention_heads, num_key_value_heads, attention_head_dim";
  }
  HfLayerSet set =
      build(shape, {std::string(prefix), "mixer.attn", "mixer"}, heads, AttentionType::mamba, state,
            "Mamba-2: mamba_num_heads x mamba_head_dim, n_groups, ssm_state_size, "
            "conv_kernel");
  // vLLM's Nemotron-H config: the config's mamba_ssm_cache_dtype, else float32.
  const std::optional<std::string> ssm = fields.get_string("mamba_ssm_cache_dtype");
  set.ssm_dtype = ssm ? read_state_dtype(fields, "mamba_ssm_cache_dtype", *ssm) : DType::f32;
  set.notes.push_back(ssm ? fmt::format("SSM state in {} (mamba_ssm_cache_dtype)", *ssm)
                          : "SSM state in float32, as vLLM's Nemotron-H config sets it");
  return set;
}

// Qwen3-Next and Qwen3.5: Gated DeltaNet layers, full attention every full_attention_interval-th
// layer (or as `layer_types` lists them).
HfLayerSet qwen_gated_delta_net(const HfFields& fields, std::string_view prefix) {
  const int num_layers = num_layers_of(fields);
  HybridShape shape;
  if (auto listed =
          shape_of_layer_types(fields, num_layers, "full_attention", "linear_attention")) {
    shape = std::move(*listed);
  } else {
    const int interval = positive_field(fields, "full_attention_interval", 4);
    shape.decided_by = fmt::format("full_attention_interval {}", interval);
    for (int i = 0; i < num_layers; ++i) {
      shape.layers.push_back((i + 1) % interval == 0 ? DecoderLayer::attention
                                                     : DecoderLayer::state);
    }
  }
  GatedDeltaNetDims dims;
  dims.num_k_heads = positive_field(fields, "linear_num_key_heads", 16);
  dims.num_v_heads = positive_field(fields, "linear_num_value_heads", 32);
  dims.head_k_dim = positive_field(fields, "linear_key_head_dim", 128);
  dims.head_v_dim = positive_field(fields, "linear_value_head_dim", 128);
  dims.conv_kernel = positive_field(fields, "linear_conv_kernel_dim", 4);
  StateLayerConfig state;
  state.dims = dims;
  return build(shape, {std::string(prefix), "self_attn.attn", "linear_attn"},
               read_hf_heads(fields, {}), AttentionType::linear_attention, state,
               "Gated DeltaNet: linear_num_key_heads, linear_num_value_heads, "
               "linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim");
}

}  // namespace

HfLayerSet map_hybrid_layers(const HfFields& fields, std::string_view prefix) {
  const std::string& type = fields.model_type();
  if (type == "jamba") return jamba(fields, prefix);
  if (type == "granitemoehybrid") return granite4(fields, prefix);
  if (type == "nemotron_h") return nemotron_h(fields, prefix);
  if (type == "qwen3_next" || type == "qwen3_5_text" || type == "qwen3_5_moe_text") {
    HfLayerSet set = qwen_gated_delta_net(fields, prefix);
    if (const std::optional<std::string> dtype = fields.get_string("mamba_ssm_dtype")) {
      set.ssm_dtype = read_state_dtype(fields, "mamba_ssm_dtype", *dtype);
      set.notes.push_back(fmt::format("recurrent state in {} (mamba_ssm_dtype)", *dtype));
    }
    return set;
  }
  fail("{}: not a hybrid model type the importer maps", type);
}

}  // namespace attnrt::detail
