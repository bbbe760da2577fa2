#pragma once
// `attnrt plan` output: the plan as stable JSON (DESIGN.md §3) and as a readable summary.

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/config/device_budget.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/config/hf_import.h"
#include "attnrt/runner/attention_plan.h"

namespace attnrt::cli {

// What the plan was made from, beyond the config: the Hugging Face import that produced it.
struct PlanExtras {
  const HfImport* hf = nullptr;
  const DeviceBudget* device = nullptr;  // --device-memory: how the KV budget was found
};

nlohmann::json plan_to_json(const EngineConfig& config, const AttentionPlan& plan,
                            const PlanExtras& extras = {});

// `without_sharing` is the KV cache plan of the same model with every layer owning its cache
// (shown as the capacity KV sharing gains), when the model shares KV; nullopt for a model that
// shares KV means the budget fits only with sharing.
std::string plan_to_text(const EngineConfig& config, const AttentionPlan& plan,
                         const std::optional<KVCachePlan>& without_sharing,
                         const PlanExtras& extras = {});
// The import's mapping, one line per layer kind (under the model line of the text report).
std::vector<std::string> import_lines(const HfImport& hf, int tensor_parallel_size);
nlohmann::json import_json(const HfImport& hf, const AttentionPlan& plan);
std::vector<std::string> device_budget_lines(const DeviceBudget& budget);
nlohmann::json device_budget_json(const DeviceBudget& budget);
// "K == V: ..." for a model with K == V layers, else empty.
std::string key_only_line(const HfImport& hf, const AttentionPlan& plan);

// Where one layer's KV view lives; `owner` is the layer itself or the one it shares with.
struct LayerBinding {
  const std::string* layer = nullptr;
  const std::string* owner = nullptr;
  const LayerViewGeometry* view = nullptr;
  bool shares() const { return owner != layer; }
};

// Per layer with a cache, in execution order; one hash lookup per layer (100 000-layer plans).
std::vector<LayerBinding> layer_bindings(const KVCachePlan& plan);
nlohmann::json bindings_json(const KVCachePlan& plan);
// `names` in execution order.
std::vector<std::string> ordered_layers(const AttentionPlan& plan,
                                        const std::set<std::string>& names);

}  // namespace attnrt::cli
