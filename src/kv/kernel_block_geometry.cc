// Manager-block ↔ kernel-block arithmetic (SEMANTICS §0, §3.3): kernel block j of manager block b
// is b*slots_per_block + j; with dense blocks (slots_per_block == ratio) kernel slots equal manager
// slots, with spaced ones they are translated.

#include "attnrt/kv/kernel_block_geometry.h"

#include <limits>

#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {

KernelBlockGeometry KernelBlockGeometry::unsplit(int block_size) {
  return KernelBlockGeometry{block_size, block_size, 1, 1};
}

std::int64_t KernelBlockGeometry::num_kernel_blocks(std::int64_t num_manager_blocks) const {
  if (num_manager_blocks <= 0) return 0;
  // The last manager block needs only its `ratio` kernel blocks, not a full row of slots.
  constexpr std::string_view what = "kernel blocks of the KV cache view";
  return checked_cast<std::int64_t>(
      checked_add(checked_product(what, num_manager_blocks - 1, slots_per_block),
                  static_cast<std::uint64_t>(ratio), what),
      what);
}

std::int64_t KernelBlockGeometry::map_to_kernel_slot(std::int64_t manager_slot) const {
  if (manager_slot < 0) return manager_slot;  // PAD_SLOT_ID and friends stay padding
  const std::int64_t block = manager_slot / manager_block_size;
  const std::int64_t offset = manager_slot % manager_block_size;
  const std::int64_t kernel_block =
      kernel_block_id(block, static_cast<int>(offset / kernel_block_size));
  return kernel_block * kernel_block_size + offset % kernel_block_size;
}

void KernelBlockGeometry::map_to_kernel_slot_mapping(std::span<std::int64_t> slot_mapping) const {
  if (dense()) return;  // identity
  for (std::int64_t& slot : slot_mapping) slot = map_to_kernel_slot(slot);
}

void KernelBlockGeometry::expand_block_ids(std::span<const std::int32_t> manager_ids,
                                           std::span<std::int32_t> out) const {
  if (out.size() != manager_ids.size() * static_cast<std::size_t>(ratio)) {
    fail(
        "expand_block_ids: {} manager block ids expand to {} kernel block ids (ratio {}), but the "
        "output holds {}",
        manager_ids.size(), manager_ids.size() * ratio, ratio, out.size());
  }
  std::size_t next = 0;
  for (const std::int32_t manager_id : manager_ids) {
    for (int j = 0; j < ratio; ++j) {
      // A hand-made slot stride times an id may pass 64 bits before the int32 check; a negative
      // id, read as unsigned, fails one of the two.
      constexpr std::string_view what = "kernel block id (manager id x slots per block + j)";
      const std::uint64_t kernel_id = checked_add(
          checked_product(what, manager_id, slots_per_block), static_cast<std::uint64_t>(j), what);
      if (kernel_id > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
        fail("kernel block id {} of manager block {} does not fit a 32-bit block table", kernel_id,
             manager_id);
      }
      out[next++] = static_cast<std::int32_t>(kernel_id);
    }
  }
}

}  // namespace attnrt
