#pragma once
// The attention layers of one Hugging Face language config, family by family (docs/hf-import.md):
// which layers slide, chunk, share or use MLA, and with which heads and head sizes. Shared by the
// importer; every rule names the config fields that decided it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/config/engine_config.h"
#include "hf_fields.h"

namespace attnrt::detail {

struct HfLayer {
  std::string name;  // as vLLM registers the layer's Attention module
  AttentionType type = AttentionType::full;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_size = 0;
  int head_size_v = 0;
  int sliding_window = 0;
  int attention_chunk_size = 0;
  int shares_with = -1;  // index of the layer whose KV cache this one reads
  bool v_copies_k = false;
  std::optional<StateLayerConfig> state;  // mamba and linear_attention layers; dtypes set later
  std::string decided_by;
};

struct HfLayerSet {
  std::vector<HfLayer> layers;     // execution order
  int max_encoder_len = 0;         // cross-attention models: encoder tokens (0: none)
  std::optional<DType> ssm_dtype;  // a family's SSM state dtype; unset: the model dtype
  std::vector<std::string> notes;
};

// The model types the importer maps, for messages; and the hybrid ones it refuses.
std::vector<std::string_view> supported_hf_model_types();
bool is_hybrid_hf_model_type(std::string_view model_type);

// `fields` reads the language config (`text_config` of a wrapper); `prefix` is the module path
// before `.layers.` ("model", or "language_model.model" inside a multimodal wrapper).
HfLayerSet map_hf_layers(const HfFields& fields, std::string_view prefix);
// The hybrid families (Jamba, Granite 4, Nemotron-H, Qwen3-Next, Qwen3.5): attention and state
// layers (hf_state_layers.cc).
HfLayerSet map_hybrid_layers(const HfFields& fields, std::string_view prefix);

}  // namespace attnrt::detail
