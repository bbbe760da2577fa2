#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt {

KVCachePlan plan_kv_cache(const EngineConfig& config, std::span<const int> kernel_block_sizes,
                          const BackendRegistry* registry) {
  KVCachePlan plan = plan_kv_cache_without_views(config, registry);
  plan.views = plan_kv_cache_views(plan.kv_cache_config, kernel_block_sizes);
  return plan;
}

KVCachePlan plan_kv_cache_without_views(const EngineConfig& config,
                                        const BackendRegistry* registry) {
  KVCachePlan plan;
  plan.forward_context = ForwardContext::from_config(config, registry);
  plan.layer_specs = get_kv_cache_spec(plan.forward_context, config.cache);
  plan.shared_layers = get_shared_kv_cache_layers(plan.forward_context);
  std::vector<KVCacheGroupSpec> groups = get_kv_cache_groups(plan.layer_specs);
  const std::uint64_t budget = kv_cache_budget(groups, config.cache);
  plan.kv_cache_config =
      get_kv_cache_config_from_groups(std::move(groups), budget, config.cache.layout);
  // After the blocks: a budget that holds no block is named as such first.
  plan.capacity = check_kv_cache_capacity(plan.layer_specs, config, budget);
  add_kv_sharing_layers_to_kv_cache_groups(plan.shared_layers,
                                           plan.kv_cache_config.kv_cache_groups);
  return plan;
}

}  // namespace attnrt
