#pragma once
// What one family's rule decides about its attention layers (kinds, heads, windows, sharing),
// before the common code names and records them (hf_layers.cc). The rules of the families that
// are plain attention beyond Llama's live in hf_plain_families.cc.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hf_fields.h"
#include "hf_layer_rules.h"

namespace attnrt::detail {

struct FamilyShape {
  HfLayerKinds kinds;
  HfHeads heads;  // every layer, unless `full_heads` differs for full layers
  std::optional<HfHeads> full_heads;
  bool full_v_copies_k = false;
  int window = 0;
  int chunk = 0;
  int num_shared = 0;  // num_kv_shared_layers
  std::string attention_module = "self_attn";
  // vLLM's Transformers modeling backend names a layer's attention "{i}.attn" (SmolLM3).
  bool transformers_backend_names = false;
  std::vector<std::string> notes;
};

using FamilyRule = std::function<FamilyShape(const HfFields&)>;

int num_layers_of(const HfFields& fields);
HfLayerKinds all_layers(int num_layers, HfLayerKind kind, std::string decided_by);

// `layer_types` if given, else vLLM's model-level window: a sliding_window that no layer type
// claims (no layer_types, or one type only) makes every layer slide, as vLLM's cache config
// passes it to every Attention without a window of its own.
FamilyShape llama_like(const HfFields& fields, HfFamilyDefaults defaults);
// Interleaved local and global layers: `layer_types`, else `derive(num_layers)`.
FamilyShape interleaved(const HfFields& fields, HfFamilyDefaults defaults,
                        const std::function<HfLayerKinds(int)>& derive);

// GLM-4, MiniMax-M2, EXAONE 4, OLMo 2/3, SmolLM3, Granite, ERNIE 4.5, HunYuan, Seed-OSS.
void add_plain_family_rules(std::map<std::string_view, FamilyRule>& rules);

}  // namespace attnrt::detail
