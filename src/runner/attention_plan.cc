#include "attnrt/runner/attention_plan.h"

#include <algorithm>

#include "attnrt/config/cg_support.h"
#include "attnrt/kv/state_blocks.h"

namespace attnrt {
namespace {

std::set<std::string> draft_layer_names(const ForwardContext& forward_context) {
  std::set<std::string> names;
  for (const AttentionLayer& layer : forward_context.layers()) {
    if (layer.is_draft()) names.insert(layer.name());
  }
  return names;
}

std::set<std::string> target_layer_names(const ForwardContext& forward_context) {
  std::set<std::string> names;
  for (const AttentionLayer& layer : forward_context.layers()) {
    if (!layer.is_draft()) names.insert(layer.name());
  }
  return names;
}

bool has_state_groups(const KVCacheConfig& kv_config) {
  return std::ranges::any_of(kv_config.kv_cache_groups, [](const KVCacheGroupSpec& group) {
    return group.kv_cache_spec.is_state();
  });
}

}  // namespace

AttentionPlan plan_attention(const EngineConfig& config, const BackendRegistry& registry,
                             Device device) {
  AttentionPlan plan;
  // The views need the kernel block sizes init_attn_backend chooses: planned once, after it.
  plan.kv = plan_kv_cache_without_views(config, &registry);
  plan.draft_layers = draft_layer_names(plan.kv.forward_context);
  // The engine translates every slot mapping it builds, so spaced kernel ids are always served.
  InitAttnBackendOptions options;
  options.draft_layer_names = &plan.draft_layers;
  options.maps_slot_mapping = true;
  plan.backends =
      init_attn_backend(plan.kv.kv_cache_config, config, plan.kv.forward_context, device, options);
  plan.kv.views = plan_kv_cache_views(plan.kv.kv_cache_config, plan.backends.kernel_block_sizes);

  const int decode_query_len = max_decode_query_len(config.speculative);
  plan.requested_mode = config.compilation.cudagraph_mode;
  CUDAGraphMode requested = plan.requested_mode;
  if (config.speculative.enable_adaptive_verification) {
    requested = resolve_adaptive_cudagraph_mode(requested, /*piecewise_capture_available=*/true);
  }
  plan.cudagraph =
      resolve_cudagraph_mode(requested, plan.backends.cg_support.min_cg_support,
                             plan.backends.cg_support.min_cg_attn_backend, decode_query_len,
                             config.compilation.attention_split_piecewise);
  if (!plan.kv.capacity.fits) plan.startup.reasons.push_back(plan.kv.capacity.message());
  // FULL graphs capture every decode request with its state block (SEMANTICS §4.4).
  if (plan.cudagraph.mode.has_full_cudagraphs() && has_state_groups(plan.kv.kv_cache_config)) {
    if (std::optional<std::string> refusal = state_blocks_refusal(
            config.scheduler.max_num_seqs, plan.kv.kv_cache_config.num_blocks)) {
      plan.startup.reasons.push_back(std::move(*refusal));
    }
  }
  CompilationConfig resolved = config.compilation;
  resolved.cudagraph_mode = plan.cudagraph.mode;
  plan.capture_sizes = compute_capture_sizes(resolved, config.scheduler, decode_query_len);

  plan.fast_prefill_layers = get_kv_sharing_fast_prefill_eligible_layers(
      config, plan.kv.forward_context, &plan.draft_layers);

  const std::set<std::string> targets = target_layer_names(plan.kv.forward_context);
  plan.checks.varlen_query_len = decode_query_len;
  plan.checks.query_lens_mismatch_unsupported_backend =
      get_query_lens_mismatch_unsupported_backend(plan.backends.attn_groups, &targets);
  plan.checks.varlen_cudagraph_unsupported_backend = get_varlen_cudagraph_unsupported_backend(
      plan.backends.attn_groups, config, decode_query_len, &targets);
  return plan;
}

}  // namespace attnrt
