// init_attn_backend (SEMANTICS §7.7 with attnrt's choices of §0): KV-sharing registration,
// attention-group discovery, kernel block sizes, the slot-mapping decision, builders and
// workspace sharing, and the CUDA-graph support of the result.

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>

#include "attnrt/backends/fast_prefill_backend.h"
#include "attnrt/core/checked_math.h"
#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/kernel_block_sizes.h"
#include "attnrt/runner/kv_sharing.h"
#include "core/fail.h"

namespace attnrt {
namespace {

using AttentionGroups = std::vector<std::vector<AttentionGroup>>;

// Phase 0. plan_kv_cache already registers sharing layers in their target's group, and
// add_kv_sharing_layers_to_kv_cache_groups is not idempotent (as in vLLM), so only layers that
// are in no group yet are added: these.
SharedKVCacheLayers unregistered_kv_sharing_layers(const ForwardContext& forward_context,
                                                   const KVCacheConfig& kv_config) {
  const KVCacheGroupIndex index(kv_config.kv_cache_groups);
  SharedKVCacheLayers unregistered;
  for (auto& [layer, target] : get_shared_kv_cache_layers(forward_context)) {
    if (index.group_of(layer) < 0) unregistered.emplace_back(layer, target);
  }
  return unregistered;
}

// Phase 1 inputs that stay fixed across the KV cache groups.
struct Discovery {
  const ForwardContext& forward_context;
  const std::set<std::string>* active_layer_names;
  std::set<std::string> fast_prefill_layers;
  KVCacheLayout layout;
  std::span<const BackendProfileConfig> profiles;
  std::map<const AttentionBackend*, AttentionBackendPtr> fast_prefill_wrappers;
  std::set<const AttentionBackend*> layout_checked;

  // The layer's backend, wrapped for fast prefill when the layer is eligible. One wrapper per
  // wrapped backend (vLLM makes one per layer; they group alike either way). A context built by
  // hand skipped ForwardContext::from_config's checks, so the backend is checked here.
  AttentionBackendPtr backend_of(const AttentionLayer& layer) {
    const AttentionBackendPtr& backend = layer.get_attn_backend();
    check_backend_serves_layer(layer, *backend);
    if (layout_checked.insert(backend.get()).second) {
      check_backend_layout(layer, *backend, layout, profiles);
    }
    if (!fast_prefill_layers.contains(layer.name())) return backend;
    AttentionBackendPtr& wrapper = fast_prefill_wrappers[backend.get()];
    if (wrapper == nullptr) wrapper = create_fast_prefill_custom_backend(backend);
    return wrapper;
  }
};

// Groups the layers of KV cache group `group_id` by (backend key, spec, query heads), in
// first-seen order. Names absent from the forward context are dropped (runner-only layers). The
// spec is the KV cache group's, the same for every layer here, so a map on the other two finds
// a layer's group without scanning the groups found so far.
std::vector<AttentionGroup> discover_attention_groups(int group_id,
                                                      const KVCacheGroupSpec& kv_cache_group,
                                                      Discovery& discovery) {
  std::vector<AttentionGroup> groups;
  std::map<std::pair<std::string, int>, std::size_t> group_of_key;
  for (const std::string& name : kv_cache_group.layer_names) {
    if (discovery.active_layer_names && !discovery.active_layer_names->contains(name)) continue;
    const AttentionLayer* layer = discovery.forward_context.find(name);
    if (layer == nullptr || layer->is_state_layer()) continue;  // state layers take no backend
    AttentionBackendPtr backend = discovery.backend_of(*layer);
    const int num_heads_q = layer->num_heads();
    const auto [it, added] =
        group_of_key.try_emplace({backend->group_key(), num_heads_q}, groups.size());
    if (!added) {
      groups[it->second].layer_names.push_back(name);
    } else {
      groups.emplace_back(std::move(backend), std::vector<std::string>{name},
                          kv_cache_group.kv_cache_spec, group_id, num_heads_q);
    }
  }
  return groups;
}

void check_batch_invariance(const AttentionGroups& attn_groups) {
  for (const std::vector<AttentionGroup>& groups : attn_groups) {
    for (const AttentionGroup& group : groups) {
      if (group.backend->supports_batch_invariance()) continue;
      fail(
          "batch_invariant mode is not supported by the {} attention backend (layers {}); choose "
          "a backend that supports batch invariance for these layers, or turn batch invariance off",
          group.backend->name(), fmt::join(group.layer_names, ", "));
    }
  }
}

// The first tensor of each group (by its first layer), or nullptr: one pass for all groups.
std::vector<const KVCacheTensor*> tensors_by_group(const KVCacheConfig& kv_config) {
  const KVCacheGroupIndex index(kv_config.kv_cache_groups);
  std::vector<const KVCacheTensor*> tensors(kv_config.kv_cache_groups.size(), nullptr);
  for (const KVCacheTensor& tensor : kv_config.kv_cache_tensors) {
    if (tensor.layers.empty()) continue;
    const int group_id = index.group_of(tensor.layers.front());
    if (group_id >= 0 && tensors[group_id] == nullptr) tensors[group_id] = &tensor;
  }
  return tensors;
}

// How group `group_id`'s manager blocks map onto kernel blocks of `kernel_block_size` tokens.
KernelBlockGeometry group_geometry(const KVCacheConfig& kv_config, const KVCacheTensor* tensor,
                                   int group_id, int kernel_block_size) {
  const KVCacheSpec& spec = kv_config.kv_cache_groups[group_id].kv_cache_spec;
  if (tensor != nullptr) {
    return get_kernel_block_geometry(spec, *tensor, kv_config.kv_cache_layout, kernel_block_size);
  }
  if (kernel_block_size == spec.block_size) return KernelBlockGeometry::unsplit(spec.block_size);
  fail(
      "KV cache group {} splits its {}-token blocks into {}-token kernel blocks but has no KV "
      "cache tensor to split; plan the KV cache config (get_kv_cache_config_from_groups) first",
      group_id, spec.block_size, kernel_block_size);
}

// Block tables hold int32 kernel ids: the budget's blocks, once split, must still fit.
void check_kernel_ids_fit(const KVCacheConfig& kv_config, std::size_t g,
                          const KernelBlockGeometry& geo) {
  if (kv_config.num_blocks <= 0 || geo.ratio <= 0) return;
  constexpr std::string_view what = "kernel block ids";
  const std::uint64_t last_id =
      checked_add(checked_product(what, kv_config.num_blocks - 1, geo.slots_per_block),
                  static_cast<std::uint64_t>(geo.ratio - 1), what);
  if (last_id <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) return;
  fail(
      "cache.memory: KV cache group {} splits {} blocks of {} tokens into {}-token kernel blocks "
      "with ids up to {}, past the int32 ids of block tables; lower cache.memory",
      g, kv_config.num_blocks, geo.manager_block_size, geo.kernel_block_size, last_id);
}

struct SlotMappingPolicy {
  bool maps_slot_mapping;
  const std::set<std::string>& slot_mapped_layers;

  bool translated(const AttentionGroup& group) const {
    return maps_slot_mapping ||
           std::any_of(group.layer_names.begin(), group.layer_names.end(),
                       [&](const std::string& name) { return slot_mapped_layers.contains(name); });
  }
};

// Sets every group's geometry and translation flag; a group whose kernel ids are spaced but whose
// slot mappings arrive in manager slots would write to the wrong kernel blocks.
void assign_kernel_geometry(AttentionGroups& attn_groups, const KVCacheConfig& kv_config,
                            std::span<const int> kernel_block_sizes,
                            const SlotMappingPolicy& policy) {
  const std::vector<const KVCacheTensor*> tensors = tensors_by_group(kv_config);
  for (std::size_t g = 0; g < attn_groups.size(); ++g) {
    for (std::size_t i = 0; i < attn_groups[g].size(); ++i) {
      AttentionGroup& group = attn_groups[g][i];
      group.kernel_geometry =
          group_geometry(kv_config, tensors[g], static_cast<int>(g), kernel_block_sizes[g]);
      check_kernel_ids_fit(kv_config, g, group.kernel_geometry);
      group.slot_mappings_translated = policy.translated(group);
      const KernelBlockGeometry& geo = group.kernel_geometry;
      if (!geo.needs_slot_translation() || group.slot_mappings_translated) continue;
      fail(
          "attention group {} of KV cache group {} (backend {}, layers {}) needs kernel slots: in "
          "layout {} its {}-token blocks split into {} kernel blocks of {} tokens and manager "
          "block b starts at kernel block b*{}, but nothing translates its slot mappings; set "
          "maps_slot_mapping (or list one of its layers in slot_mapped_layers), or use a "
          "layer-compact layout such as LBNHC without padded pages",
          i, g, group.backend->name(), fmt::join(group.layer_names, ", "),
          layout_name(kv_config.kv_cache_layout), geo.manager_block_size, geo.ratio,
          geo.kernel_block_size, geo.slots_per_block);
    }
  }
}

// The first builder that provides a workspace supplies every later builder that accepts one;
// micro-batch builders share it because they run one after another on one stream.
void share_workspace(AttentionGroups& attn_groups, const EngineConfig& config) {
  std::shared_ptr<Buffer> workspace;
  for (std::vector<AttentionGroup>& groups : attn_groups) {
    for (AttentionGroup& group : groups) {
      for (std::unique_ptr<AttentionMetadataBuilder>& builder : group.metadata_builders) {
        if (workspace == nullptr) {
          workspace = builder->provide_workspace(config);
        } else if (builder->accepts_workspace()) {
          builder->set_workspace_buffer(workspace);
        }
      }
    }
  }
}

}  // namespace

InitAttnBackendResult init_attn_backend(KVCacheConfig& kv_cache_config, const EngineConfig& config,
                                        const ForwardContext& forward_context, Device device,
                                        const InitAttnBackendOptions& options) {
  // An error must leave the caller's config as it was, so sharing layers are registered in a
  // copy, made only when there are any (a 100 000-layer copy is not free).
  const SharedKVCacheLayers unregistered =
      unregistered_kv_sharing_layers(forward_context, kv_cache_config);
  std::optional<KVCacheConfig> registered;
  if (!unregistered.empty()) {
    registered = kv_cache_config;
    add_kv_sharing_layers_to_kv_cache_groups(unregistered, registered->kv_cache_groups);
  }
  const KVCacheConfig& kv_config = registered ? *registered : kv_cache_config;

  InitAttnBackendResult result;
  Discovery discovery{forward_context,
                      options.active_layer_names,
                      get_kv_sharing_fast_prefill_eligible_layers(config, forward_context,
                                                                  options.draft_layer_names),
                      kv_config.kv_cache_layout,
                      config.backends,
                      {},
                      {}};
  for (std::size_t g = 0; g < kv_config.kv_cache_groups.size(); ++g) {
    result.attn_groups.push_back(
        discover_attention_groups(static_cast<int>(g), kv_config.kv_cache_groups[g], discovery));
  }
  if (options.batch_invariant) check_batch_invariance(result.attn_groups);

  result.kernel_block_sizes = prepare_kernel_block_sizes(kv_config, result.attn_groups);
  assign_kernel_geometry(result.attn_groups, kv_config, result.kernel_block_sizes,
                         SlotMappingPolicy{options.maps_slot_mapping, options.slot_mapped_layers});

  const int num_ubatches = std::max(config.parallel.num_ubatches, 1);
  for (std::size_t g = 0; g < result.attn_groups.size(); ++g) {
    for (AttentionGroup& group : result.attn_groups[g]) {
      group.create_metadata_builders(config, device, result.kernel_block_sizes[g], num_ubatches);
    }
  }
  share_workspace(result.attn_groups, config);

  result.cg_support = get_attn_cg_support(result.attn_groups, config);
  if (registered) kv_cache_config = std::move(*registered);
  return result;
}

}  // namespace attnrt
