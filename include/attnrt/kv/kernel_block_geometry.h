#pragma once
// How manager blocks map onto kernel blocks when a backend wants smaller blocks (SEMANTICS §0,
// §3.3). A manager block of `ratio` kernel blocks keeps dense ids (b*ratio + j) when it is one
// dense, unpadded page; otherwise ids are spaced (b*slots_per_block + j) so that every kernel block
// is a fixed stride apart in the layer's view, and slot mappings must be translated.

#include <cstdint>
#include <span>

#include "attnrt/core/export.h"

namespace attnrt {

struct ATTNRT_API KernelBlockGeometry {
  int manager_block_size = 16;
  int kernel_block_size = 16;
  int ratio = 1;                     // manager_block_size / kernel_block_size
  std::int64_t slots_per_block = 1;  // kernel-block strides per manager block (>= ratio)

  // Identity mapping for unsplit blocks.
  static KernelBlockGeometry unsplit(int block_size);

  bool dense() const { return slots_per_block == ratio; }
  bool needs_slot_translation() const { return !dense(); }

  std::int64_t kernel_block_id(std::int64_t manager_block, int j) const {
    return manager_block * slots_per_block + j;
  }
  // Kernel blocks a view must span to address `num_manager_blocks` manager blocks.
  std::int64_t num_kernel_blocks(std::int64_t num_manager_blocks) const;
  // Manager slot (block*manager_block_size + offset) → kernel slot; negative slots (padding) pass.
  std::int64_t map_to_kernel_slot(std::int64_t manager_slot) const;
  void map_to_kernel_slot_mapping(std::span<std::int64_t> slot_mapping) const;
  // Writes `ratio` kernel ids per manager id into `out` (size manager_ids.size() * ratio).
  void expand_block_ids(std::span<const std::int32_t> manager_ids,
                        std::span<std::int32_t> out) const;

  friend bool operator==(const KernelBlockGeometry&, const KernelBlockGeometry&) = default;
};

}  // namespace attnrt
