#include "attnrt/runner/attention_group.h"

#include "core/fail.h"

namespace attnrt {
namespace {

void check_has_builder(const AttentionGroup& group, int ubatch) {
  if (ubatch >= 0 && static_cast<std::size_t>(ubatch) < group.metadata_builders.size()) return;
  fail(
      "attention group of KV cache group {} (backend {}, first layer {}) has {} metadata "
      "builder(s), so micro-batch {} has none; create one builder per micro-batch with "
      "create_metadata_builders",
      group.kv_cache_group_id, group.backend ? group.backend->name() : "none",
      group.layer_names.empty() ? "none" : group.layer_names.front(),
      group.metadata_builders.size(), ubatch);
}

}  // namespace

AttentionGroup::AttentionGroup(std::shared_ptr<const AttentionBackend> attn_backend,
                               std::vector<std::string> names, KVCacheSpec spec, int group_id,
                               int heads_q)
    : backend(std::move(attn_backend)),
      layer_names(std::move(names)),
      kv_cache_spec(std::move(spec)),
      kv_cache_group_id(group_id),
      num_heads_q(heads_q),
      kernel_geometry(KernelBlockGeometry::unsplit(this->kv_cache_spec.block_size)) {}

void AttentionGroup::create_metadata_builders(const EngineConfig& config, Device device,
                                              std::optional<int> kernel_block_size,
                                              int num_builders) {
  if (backend == nullptr) {
    fail("attention group of KV cache group {} has no backend; it cannot create builders",
         kv_cache_group_id);
  }
  // Builders see KERNEL blocks: their block tables and slot mappings are in kernel units.
  const KVCacheSpec builder_spec =
      kernel_block_size ? kv_cache_spec.with_block_size(*kernel_block_size) : kv_cache_spec;
  metadata_builders.clear();
  for (int i = 0; i < num_builders; ++i) {
    // Independent instances: micro-batches must not share a builder's persistent buffers.
    metadata_builders.push_back(backend->create_builder(builder_spec, layer_names, config, device));
  }
}

AttentionMetadataBuilder& AttentionGroup::get_metadata_builder(int ubatch) {
  check_has_builder(*this, ubatch);
  return *metadata_builders[ubatch];
}

const AttentionMetadataBuilder& AttentionGroup::get_metadata_builder(int ubatch) const {
  check_has_builder(*this, ubatch);
  return *metadata_builders[ubatch];
}

void AttentionGroup::map_to_kernel_slot_mapping(std::span<std::int64_t> slot_mapping) const {
  kernel_geometry.map_to_kernel_slot_mapping(slot_mapping);
}

}  // namespace attnrt
