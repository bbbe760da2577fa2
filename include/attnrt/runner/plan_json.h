#pragma once
// The stable JSON of an attention plan (docs/design.md §3): `attnrt plan --json` prints it and
// the Python module's Plan.to_dict() returns it, from this one writer.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "attnrt/config/device_budget.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/config/hf_import.h"
#include "attnrt/core/export.h"
#include "attnrt/runner/attention_plan.h"

namespace attnrt {

// What the plan was made from, beyond the config.
struct PlanJsonExtras {
  const HfImport* hf = nullptr;          // the Hugging Face import that produced the config
  const DeviceBudget* device = nullptr;  // --device-memory: how the KV budget was found
};

// The JSON text: compact (indent -1, Plan.to_dict()'s input) or pretty-printed with `indent` spaces
// per level (`attnrt plan --json`: 2). Text, not an nlohmann::json, so that including this header
// does not pull in the whole JSON library.
ATTNRT_API std::string plan_json_text(const EngineConfig& config, const AttentionPlan& plan,
                                      const PlanJsonExtras& extras = {}, int indent = -1);

// Where one layer's KV view lives; `owner` is the layer itself or the one it shares with.
struct LayerBinding {
  const std::string* layer = nullptr;
  const std::string* owner = nullptr;
  const LayerViewGeometry* view = nullptr;
  bool shares() const { return owner != layer; }
};

// Per layer with a cache, in execution order; one hash lookup per layer (100 000-layer plans).
ATTNRT_API std::vector<LayerBinding> layer_bindings(const KVCachePlan& plan);
// `names` in execution order.
ATTNRT_API std::vector<std::string> ordered_layers(const AttentionPlan& plan,
                                                   const std::set<std::string>& names);
// KV heads per rank of an imported layer kind (MLA's latent is replicated).
ATTNRT_API int imported_kv_heads_per_rank(const ImportedLayerKind& kind, int tp);
// Bytes the K == V layers' V halves take in this plan: what a key-only cache would not hold.
ATTNRT_API std::uint64_t key_only_saving_bytes(const HfImport& hf, const AttentionPlan& plan);

}  // namespace attnrt
