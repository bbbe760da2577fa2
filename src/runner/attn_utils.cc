// KV-sharing fast-prefill eligibility (SEMANTICS §7.6). The rest of attn_utils lives in
// cg_support_checks.cc, init_attn_backend.cc and bind_kv_caches.cc.

#include "attnrt/runner/attn_utils.h"

namespace attnrt {

std::set<std::string> get_kv_sharing_fast_prefill_eligible_layers(
    const EngineConfig& config, const ForwardContext& forward_context,
    const std::set<std::string>* draft_layer_names) {
  std::set<std::string> eligible;
  if (!config.cache.kv_sharing_fast_prefill) return eligible;
  // Layers are in execution order, so the eligible ones are the trailing run of sharing layers
  // (none without sharing layers). Draft layers register after the target's and are stepped
  // over, neither collected nor ending the run.
  // rbegin/rend rather than std::views::reverse, which clang-14 cannot use with libstdc++ 12.
  const auto& layers = forward_context.layers();
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const AttentionLayer& layer = *it;
    if (draft_layer_names != nullptr && draft_layer_names->contains(layer.name())) continue;
    if (!layer.shares_kv()) break;
    eligible.insert(layer.name());
  }
  return eligible;
}

}  // namespace attnrt
