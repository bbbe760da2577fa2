#include "attnrt/runner/kv_cache_plan.h"

#include <algorithm>

namespace attnrt {
namespace {

// The smallest kernel block size `sizes` allows: an exact size, or a MultipleOf's base.
int smallest_kernel_block_size(std::span<const KernelBlockSize> sizes) {
  int smallest = 0;
  for (const KernelBlockSize& size : sizes) {
    const int value =
        std::holds_alternative<int>(size) ? std::get<int>(size) : std::get<MultipleOf>(size).base;
    if (value > 0 && (smallest == 0 || value < smallest)) smallest = value;
  }
  return std::max(smallest, 1);
}

// The block-size grain of a hybrid model's attention (vLLM's kernel_block_alignment_size): the
// smallest kernel block size of each attention layer's backend, the largest over the layers so
// that every backend can cut the aligned block. 1 without backends.
int hybrid_kernel_alignment(const ForwardContext& forward_context, const LayerSpecs& specs) {
  int alignment = 1;
  for (const auto& [name, spec] : specs) {
    if (spec.is_state()) continue;
    const AttentionLayer* layer = forward_context.find(name);
    if (layer == nullptr || layer->is_state_layer() || !layer->has_attn_backend()) continue;
    const std::vector<KernelBlockSize> sizes =
        layer->get_attn_backend()->get_supported_kernel_block_sizes(spec);
    alignment = std::max(alignment, smallest_kernel_block_size(sizes));
  }
  return alignment;
}

}  // namespace

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
  // Attention pages grow to hold a state page, and state pages are padded to them (SEMANTICS §4.4).
  plan.hybrid_block_size = align_hybrid_kv_cache_specs(
      plan.layer_specs, hybrid_kernel_alignment(plan.forward_context, plan.layer_specs));
  plan.attention_block_size =
      plan.hybrid_block_size ? plan.hybrid_block_size->block_size : config.cache.block_size;
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
