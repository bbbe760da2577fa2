#pragma once
// `attnrt plan` output as a readable summary; the stable JSON is the library's (plan_json.h).

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
#include "attnrt/runner/plan_json.h"

namespace attnrt::cli {

using PlanExtras = PlanJsonExtras;

// `without_sharing` is the KV cache plan of the same model with every layer owning its cache
// (shown as the capacity KV sharing gains), when the model shares KV; nullopt for a model that
// shares KV means the budget fits only with sharing.
std::string plan_to_text(const EngineConfig& config, const AttentionPlan& plan,
                         const std::optional<KVCachePlan>& without_sharing,
                         const PlanExtras& extras = {});
// The import's mapping, one line per layer kind (under the model line of the text report).
std::vector<std::string> import_lines(const HfImport& hf, int tensor_parallel_size);
std::vector<std::string> device_budget_lines(const DeviceBudget& budget);
// "K == V: ..." for a model with K == V layers, else empty.
std::string key_only_line(const HfImport& hf, const AttentionPlan& plan);

}  // namespace attnrt::cli
