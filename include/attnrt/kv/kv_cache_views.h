#pragma once
// Per-layer KV cache views (SEMANTICS §3.5): every layer that owns a cache gets a 4-D view
// [blocks, head slots, states per block, content] over the shared backing, in the layout's
// physical strides, K then V packed along the content axis. With kernel-block splitting the block
// axis counts kernel blocks. The geometry is computed without allocating, so `attnrt plan` can
// describe a 24 GiB cache and `allocate_kv_cache` turns the same geometry into tensors.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnrt/core/device.h"
#include "attnrt/core/export.h"
#include "attnrt/core/tensor.h"
#include "attnrt/kv/kernel_block_geometry.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/kv/state_views.h"

namespace attnrt {

// Byte strides in logical [L, B, H, N, C] order for `num_layers` layer slots of `spec`. With a
// kernel block size the B axis counts kernel blocks and N kernel states. `fixed` pins any of the
// five strides (a fixed stride propagates outward). Throws Error for a padded page whose tail
// cannot be padded in this layout.
ATTNRT_API std::array<std::int64_t, 5> compute_layout_strides(
    const KVCacheSpec& spec, std::int64_t num_blocks, int num_layers, KVCacheLayout layout,
    std::optional<int> kernel_block_size = std::nullopt,
    std::array<std::optional<std::int64_t>, 5> fixed = {});

// Splitting geometry of one group's tensor. Throws Error (message contains "kernel block") when a
// manager page cannot be cut into kernel pages: the kernel size does not divide the block size, a
// head axis lies outside the page (LHBNC/BHLNC with several heads), or the page is not on the
// kernel-page grid.
ATTNRT_API KernelBlockGeometry get_kernel_block_geometry(const KVCacheSpec& spec,
                                                         const KVCacheTensor& tensor,
                                                         KVCacheLayout layout,
                                                         int kernel_block_size);

struct LayerViewGeometry {
  std::string layer;
  int group_id = 0;
  int layer_slot = 0;            // L index inside the backing
  std::int64_t byte_offset = 0;  // of element [0, 0, 0, 0]
  DType dtype = DType::bf16;
  std::array<std::int64_t, 4> shape{};    // [kernel blocks, head slots, states, content elements]
  std::array<std::int64_t, 4> strides{};  // in elements
  KernelBlockGeometry geometry;
  std::vector<StateViewGeometry> states;  // a state layer's typed views of its int8 page view
};

// One entry per layer that owns a cache, in group order then L order. A state layer's view is its
// page as int8 [blocks, 1, 1, page bytes], with its state tensors' views in `states`.
// `kernel_block_sizes` has one entry per group (empty: no splitting).
ATTNRT_API std::vector<LayerViewGeometry> plan_kv_cache_views(
    const KVCacheConfig& kv_cache_config, std::span<const int> kernel_block_sizes = {});

// An allocated KV cache: the backing buffer and every owning layer's view.
struct KVCacheAllocation {
  std::shared_ptr<Buffer> backing;
  std::map<std::string, Tensor> views;
  std::map<std::string, KernelBlockGeometry> geometry;
  std::int64_t num_blocks = 0;
};

// Allocates the zeroed backing (rounded up to 4 KiB) and creates every view. Throws before
// allocating if the views cannot be made.
ATTNRT_API KVCacheAllocation allocate_kv_cache(const KVCacheConfig& kv_cache_config, Device device,
                                               std::span<const int> kernel_block_sizes = {});

}  // namespace attnrt
