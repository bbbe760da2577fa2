#pragma once
// The rules every family's mapping is built from: vLLM's KV-head and head-size precedence, the
// `layer_types` list (given, or derived as transformers derives it), windows with transformers'
// defaults, and the KV-sharing targets of `num_kv_shared_layers`.

#include <optional>
#include <string>
#include <vector>

#include "attnrt/config/engine_config.h"
#include "hf_fields.h"

namespace attnrt::detail {

enum class HfLayerKind { full, sliding, chunked };

struct HfLayerKinds {
  std::vector<HfLayerKind> kinds;
  std::string decided_by;  // e.g. "layer_types" or "sliding_window_pattern 6 (default)"
};

struct HfHeads {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_size = 0;
  std::string decided_by;
};

// What a family's vLLM model file does beyond the generic rules. The class defaults of omitted
// fields are filled before (hf_class_defaults.h).
struct HfFamilyDefaults {
  bool ignores_head_dim = false;  // the vLLM model file always derives it (Qwen2, Cohere2, ...)
};

// Query heads, KV heads (vLLM's first of n_head_kv, num_kv_heads, num_key_value_heads,
// multi_query_group_num) and head size (head_dim unless null, else hidden / heads).
HfHeads read_hf_heads(const HfFields& fields, const HfFamilyDefaults& defaults);
// hidden_size / num_attention_heads, refused unless it divides.
int derived_head_size(const HfFields& fields);

// The `layer_types` strings, checked against num_hidden_layers; nullopt when the config has none.
std::optional<std::vector<std::string>> read_layer_type_names(const HfFields& fields,
                                                              int num_layers);
// `layer_types` when the config has it (checked against num_hidden_layers); nullopt otherwise.
// Hybrid entries (mamba, linear_attention, ...) are refused.
std::optional<HfLayerKinds> read_layer_types(const HfFields& fields, int num_layers);
// Sliding unless (i + 1) % period == 0 (Gemma 3, Cohere2: `sliding_window_pattern`).
HfLayerKinds sliding_except_every(int num_layers, int period, std::string decided_by);

// The window of the config: sliding_window; null or absent (the class default is filled in
// before) mean none.
int read_window(const HfFields& fields);

// Targets of the last `num_kv_shared_layers` layers: the last earlier layer of the same kind
// before the shared range (transformers' rule). -1 for a layer that owns its cache.
std::vector<int> kv_sharing_targets(const HfFields& fields, const std::vector<HfLayerKind>& kinds,
                                    int num_shared);

// One layer of `type` with `heads`; `decided_by` lists the fields behind it.
struct HfLayer;
HfLayer make_layer(std::string name, AttentionType type, const HfHeads& heads, int head_size_v,
                   std::string decided_by);

}  // namespace attnrt::detail
