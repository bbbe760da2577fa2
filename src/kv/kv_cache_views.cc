// Per-layer KV cache views over one shared backing (SEMANTICS §3.5, DESIGN §3 "Memory"): the
// geometry is planned without allocating, then allocate_kv_cache turns it into tensors. Split
// manager blocks become `ratio` kernel pages inside the page; a view's block axis then steps one
// kernel page, and kernel block ids are spaced when pages are padded or interleaved with layers.

#include "attnrt/kv/kv_cache_views.h"

#include <algorithm>

#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {
namespace {

constexpr std::uint64_t kBackingAlignment = 4096;

// LHBNC and BHLNC keep the head axis outside the page: a page holds one head's states only.
bool head_axis_outside_page(KVCacheLayout layout) {
  const std::array<int, 5> order = stride_order(layout);
  return order[2] != kv_axis::H && order[3] != kv_axis::H && order[4] != kv_axis::H;
}

std::int64_t kernel_page_bytes(const KVCacheSpec& spec, int kernel_block_size) {
  constexpr std::string_view what = "KV cache kernel page bytes";
  const std::int64_t bytes = checked_cast<std::int64_t>(
      checked_product(what, spec.num_heads(), spec.num_kernel_states(kernel_block_size),
                      spec.state_content_size_bytes()),
      what);
  if (bytes <= 0) fail("KV cache spec {} has an empty kernel page", spec.describe());
  return bytes;
}

// Byte strides of one layer's [B, H, N, C] view. Split blocks step one kernel page along B, and
// their H/N/C strides are those of a kernel page (the padding lives between pages, not inside).
std::array<std::int64_t, 4> view_byte_strides(const KVCacheSpec& spec, std::int64_t num_blocks,
                                              int layer_slots, KVCacheLayout layout,
                                              const KVCacheTensor& tensor,
                                              const KernelBlockGeometry& geometry) {
  std::array<std::int64_t, 5> strides{};
  if (geometry.ratio == 1) {
    strides = compute_layout_strides(spec, num_blocks, layer_slots, layout, std::nullopt,
                                     {tensor.layer_stride, tensor.block_stride});
  } else {
    KVCacheSpec kernel_page_spec = spec;
    kernel_page_spec.page_size_padded.reset();
    strides = compute_layout_strides(
        kernel_page_spec, num_blocks, layer_slots, layout, geometry.kernel_block_size,
        {tensor.layer_stride, kernel_page_bytes(spec, geometry.kernel_block_size)});
  }
  return {strides[kv_axis::B], strides[kv_axis::H], strides[kv_axis::N], strides[kv_axis::C]};
}

std::int64_t to_elements(std::int64_t bytes, std::int64_t element_size, std::string_view what,
                         const KVCacheSpec& spec) {
  if (bytes % element_size != 0) {
    fail("KV cache {} of {} bytes is not a whole number of {} elements ({} bytes each) for spec {}",
         what, bytes, dtype_name(spec.dtype), element_size, spec.describe());
  }
  return bytes / element_size;
}

// Bytes [offset, end) addressed by a view; end == offset for an empty view. Checked: a tensor
// built by hand may carry strides whose span passes 64 bits.
std::uint64_t view_end_byte(const LayerViewGeometry& view) {
  constexpr std::string_view what = "KV cache view extent";
  std::uint64_t last = 0;
  for (int d = 0; d < 4; ++d) {
    if (view.shape[d] == 0) return static_cast<std::uint64_t>(view.byte_offset);
    last = checked_add(last, checked_product(what, view.shape[d] - 1, view.strides[d]), what);
  }
  const std::uint64_t bytes = checked_product(what, last + 1, dtype_size(view.dtype));
  return checked_add(static_cast<std::uint64_t>(view.byte_offset), bytes, what);
}

void check_config(const KVCacheConfig& config, std::span<const int> kernel_block_sizes) {
  if (!kernel_block_sizes.empty() && kernel_block_sizes.size() != config.kv_cache_groups.size()) {
    fail("kernel_block_sizes has {} entries but there are {} KV cache groups; pass one per group",
         kernel_block_sizes.size(), config.kv_cache_groups.size());
  }
  for (const KVCacheTensor& tensor : config.kv_cache_tensors) {
    if (tensor.size != config.backing_bytes()) {
      fail("KV cache tensors must share one backing allocation: sizes {} and {} differ",
           config.backing_bytes(), tensor.size);
    }
  }
}

// The group that owns every layer of `tensor`.
int group_of_tensor(const KVCacheGroupIndex& index, const KVCacheTensor& tensor) {
  const int group_id = index.group_of(tensor.layers.front());
  for (const std::string& layer : tensor.layers) {
    const int layer_group = index.group_of(layer);
    if (layer_group != group_id) {
      fail(
          "KV cache tensor holds layers {} (group {}) and {} (group {}); a tensor holds one "
          "group's layers",
          tensor.layers.front(), group_id, layer, layer_group);
    }
  }
  if (group_id < 0) fail("KV cache tensor layer {} is in no KV cache group", tensor.layers.front());
  return group_id;
}

void append_tensor_views(const KVCacheConfig& config, const KVCacheTensor& tensor, int group_id,
                         int kernel_block_size, std::vector<LayerViewGeometry>& views) {
  const KVCacheSpec& spec = config.kv_cache_groups[group_id].kv_cache_spec;
  const KVCacheLayout layout = config.kv_cache_layout;
  const int layer_slots = std::max(config.layer_slots, static_cast<int>(tensor.layers.size()));
  const KernelBlockGeometry geometry =
      get_kernel_block_geometry(spec, tensor, layout, kernel_block_size);
  const std::array<std::int64_t, 4> byte_strides =
      view_byte_strides(spec, config.num_blocks, layer_slots, layout, tensor, geometry);

  const std::int64_t element_size = static_cast<std::int64_t>(dtype_size(spec.dtype));
  LayerViewGeometry view;
  view.group_id = group_id;
  view.dtype = spec.dtype;
  view.geometry = geometry;
  view.shape = {geometry.num_kernel_blocks(config.num_blocks), spec.num_heads(),
                spec.num_kernel_states(geometry.kernel_block_size),
                to_elements(spec.state_content_size_bytes(), element_size, "state content", spec)};
  view.strides = {to_elements(byte_strides[0], element_size, "block stride", spec),
                  to_elements(byte_strides[1], element_size, "head stride", spec),
                  to_elements(byte_strides[2], element_size, "state stride", spec), 1};
  for (std::size_t slot = 0; slot < tensor.layers.size(); ++slot) {
    view.layer = tensor.layers[slot];
    view.layer_slot = static_cast<int>(slot);
    view.byte_offset = checked_cast<std::int64_t>(
        checked_add(static_cast<std::uint64_t>(tensor.offset),
                    checked_product("KV cache layer offset", slot, tensor.layer_stride),
                    "KV cache layer offset"),
        "KV cache layer offset");
    if (view_end_byte(view) > tensor.size) {
      fail(
          "KV cache view of layer {} ends at byte {}, past the {}-byte backing; the tensor's "
          "strides do not fit {} blocks",
          view.layer, view_end_byte(view), tensor.size, config.num_blocks);
    }
    if (spec.is_state()) {
      view.states =
          plan_state_views(spec.state_tensors, view.shape[0], view.byte_offset, byte_strides[0]);
    }
    views.push_back(view);
  }
}

}  // namespace

KernelBlockGeometry get_kernel_block_geometry(const KVCacheSpec& spec, const KVCacheTensor& tensor,
                                              KVCacheLayout layout, int kernel_block_size) {
  if (kernel_block_size <= 0 || spec.block_size % kernel_block_size != 0) {
    fail(
        "kernel block size {} does not divide the manager block size {}; pick a kernel block "
        "size that divides it",
        kernel_block_size, spec.block_size);
  }
  const int ratio = spec.block_size / kernel_block_size;
  if (ratio == 1) return KernelBlockGeometry::unsplit(spec.block_size);
  if (head_axis_outside_page(layout) && spec.num_heads() > 1) {
    fail(
        "layout {} stores each of the {} head slots in its own page, so a manager block of {} "
        "tokens cannot be split into kernel blocks of {} tokens; use a layer-compact layout such "
        "as LBNHC or a block size of {}",
        layout_name(layout), spec.num_heads(), spec.block_size, kernel_block_size,
        kernel_block_size);
  }
  const std::int64_t kernel_page = kernel_page_bytes(spec, kernel_block_size);
  if (checked_product("KV cache kernel pages per block", kernel_page, ratio) !=
      static_cast<std::uint64_t>(spec.real_page_size_bytes())) {
    fail(
        "a page of {} bytes is not {} kernel blocks of {} bytes ({} tokens); use a kernel block "
        "size that is a multiple of tokens_per_state ({})",
        spec.real_page_size_bytes(), ratio, kernel_page, kernel_block_size, spec.tokens_per_state);
  }
  if (tensor.block_stride % kernel_page != 0 || tensor.block_stride < spec.real_page_size_bytes()) {
    fail(
        "block stride {} bytes (layout {}) is not on the {}-byte kernel-page grid, so a manager "
        "block cannot be split into {} kernel blocks of {} tokens; pad pages to a multiple of {} "
        "bytes or use a block size of {}",
        tensor.block_stride, layout_name(layout), kernel_page, ratio, kernel_block_size,
        kernel_page, kernel_block_size);
  }
  return KernelBlockGeometry{spec.block_size, kernel_block_size, ratio,
                             tensor.block_stride / kernel_page};
}

std::vector<LayerViewGeometry> plan_kv_cache_views(const KVCacheConfig& kv_cache_config,
                                                   std::span<const int> kernel_block_sizes) {
  check_config(kv_cache_config, kernel_block_sizes);
  const KVCacheGroupIndex index(kv_cache_config.kv_cache_groups);
  std::vector<LayerViewGeometry> views;
  for (const KVCacheTensor& tensor : kv_cache_config.kv_cache_tensors) {
    if (tensor.layers.empty()) continue;
    const int group_id = group_of_tensor(index, tensor);
    const KVCacheSpec& spec = kv_cache_config.kv_cache_groups[group_id].kv_cache_spec;
    if (!spec.owns_kv_cache()) continue;
    const int kernel_block_size =
        kernel_block_sizes.empty() ? spec.block_size : kernel_block_sizes[group_id];
    append_tensor_views(kv_cache_config, tensor, group_id, kernel_block_size, views);
  }
  return views;
}

KVCacheAllocation allocate_kv_cache(const KVCacheConfig& kv_cache_config, Device device,
                                    std::span<const int> kernel_block_sizes) {
  const std::vector<LayerViewGeometry> plan =
      plan_kv_cache_views(kv_cache_config, kernel_block_sizes);
  KVCacheAllocation allocation;
  allocation.num_blocks = kv_cache_config.num_blocks;
  if (kv_cache_config.kv_cache_tensors.empty()) return allocation;

  const std::uint64_t bytes = kv_cache_config.backing_bytes();
  const std::uint64_t rounded =
      checked_add(bytes, kBackingAlignment - 1, "KV cache backing bytes") / kBackingAlignment *
      kBackingAlignment;
  allocation.backing =
      Buffer::allocate(checked_cast<std::size_t>(rounded, "KV cache backing bytes"), device);
  for (const LayerViewGeometry& view : plan) {
    Tensor tensor(allocation.backing, view.dtype, {view.shape.begin(), view.shape.end()},
                  {view.strides.begin(), view.strides.end()}, view.byte_offset);
    if (!allocation.views.emplace(view.layer, std::move(tensor)).second) {
      fail("layer {} appears in two KV cache tensors; each layer owns one view", view.layer);
    }
    allocation.geometry.emplace(view.layer, view.geometry);
  }
  return allocation;
}

}  // namespace attnrt
