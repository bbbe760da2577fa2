// CUDA-graph support of the attention groups and the two adaptive-verification checks
// (SEMANTICS §7.1–§7.4). All three walk the groups in order, restricted to the groups that share
// a layer with `checked_layer_names` when it is given.

#include <algorithm>

#include "attnrt/runner/attn_utils.h"

namespace attnrt {
namespace {

// A group shared by target and draft layers takes part in a target-scoped check.
bool is_checked(const AttentionGroup& group, const std::set<std::string>* checked_layer_names) {
  if (checked_layer_names == nullptr) return true;
  return std::any_of(group.layer_names.begin(), group.layer_names.end(),
                     [&](const std::string& name) { return checked_layer_names->contains(name); });
}

// Calls `visit(group)` for every checked group until it returns true; returns that group.
template <typename Visit>
const AttentionGroup* find_checked_group(std::span<const std::vector<AttentionGroup>> attn_groups,
                                         const std::set<std::string>* checked_layer_names,
                                         Visit visit) {
  for (const std::vector<AttentionGroup>& groups : attn_groups) {
    for (const AttentionGroup& group : groups) {
      if (is_checked(group, checked_layer_names) && visit(group)) return &group;
    }
  }
  return nullptr;
}

}  // namespace

AttentionCGSupportInfo AttentionCGSupportInfo::narrow(AttentionCGSupport support,
                                                      std::string backend) const {
  if (!weaker(support, min_cg_support)) return *this;
  return AttentionCGSupportInfo{support, std::move(backend)};
}

AttentionCGSupportInfo get_attn_cg_support(std::span<const std::vector<AttentionGroup>> attn_groups,
                                           const EngineConfig& config,
                                           const std::set<std::string>* checked_layer_names) {
  AttentionCGSupportInfo info;
  find_checked_group(attn_groups, checked_layer_names, [&](const AttentionGroup& group) {
    const AttentionCGSupport support =
        group.get_metadata_builder(0).get_cudagraph_support(config, group.kv_cache_spec);
    info = info.narrow(support, group.backend->name());
    return false;  // visit every group
  });
  return info;
}

std::optional<std::string> get_query_lens_mismatch_unsupported_backend(
    std::span<const std::vector<AttentionGroup>> attn_groups,
    const std::set<std::string>* checked_layer_names) {
  const AttentionGroup* group =
      find_checked_group(attn_groups, checked_layer_names, [](const AttentionGroup& g) {
        return !g.backend->supports_device_cpu_query_lens_mismatch();
      });
  if (group == nullptr) return std::nullopt;
  return group->backend->name();
}

std::optional<VarlenUnsupportedBackend> get_varlen_cudagraph_unsupported_backend(
    std::span<const std::vector<AttentionGroup>> attn_groups, const EngineConfig& config,
    int max_query_len, const std::set<std::string>* checked_layer_names) {
  std::optional<VarlenUnsupportedBackend> unsupported;
  find_checked_group(attn_groups, checked_layer_names, [&](const AttentionGroup& group) {
    const AttentionMetadataBuilder& builder = group.get_metadata_builder(0);
    const AttentionCGSupport support = builder.get_cudagraph_support(config, group.kv_cache_spec);
    if (support == AttentionCGSupport::ALWAYS) return false;  // replays any batch
    std::optional<int> bound;
    // A NEVER builder has no FULL graphs, whatever bound it reports.
    if (support != AttentionCGSupport::NEVER) {
      bound = builder.get_varlen_cudagraph_max_query_len(config, group.kv_cache_spec);
      if (bound && *bound >= max_query_len) return false;
    }
    unsupported = VarlenUnsupportedBackend{group.backend->name(), bound};
    return true;
  });
  return unsupported;
}

}  // namespace attnrt
