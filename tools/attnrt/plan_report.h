#pragma once
// `attnrt plan` output: the plan as stable JSON (DESIGN.md §3) and as a readable summary.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "attnrt/config/engine_config.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt::cli {

nlohmann::json plan_to_json(const EngineConfig& config, const KVCachePlan& plan);

// `without_sharing` is the plan of the same model with every layer owning its cache (shown as
// the capacity KV sharing gains), when the model shares KV.
std::string plan_to_text(const EngineConfig& config, const KVCachePlan& plan,
                         const std::optional<KVCachePlan>& without_sharing);

}  // namespace attnrt::cli
