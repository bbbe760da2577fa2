// Byte strides of a KV cache in a layout (SEMANTICS §3.5): walk the physical axes from innermost to
// outermost, each axis taking the running stride unless pinned; a padded page widens the stride of
// the innermost layer/block axis to the padded size so that the padding tail is never addressed.

#include "attnrt/core/checked_math.h"
#include "attnrt/kv/kv_cache_views.h"
#include "core/fail.h"

namespace attnrt {
namespace {

constexpr std::array<char, 5> kAxisNames = {'L', 'B', 'H', 'N', 'C'};

bool is_layer_or_block(int axis) {
  return axis == kv_axis::L || axis == kv_axis::B;
}

int split_ratio(const KVCacheSpec& spec, int kernel_block_size) {
  if (kernel_block_size <= 0 || spec.block_size % kernel_block_size != 0) {
    fail(
        "kernel block size {} does not divide the manager block size {}; pick a kernel block "
        "size that divides it",
        kernel_block_size, spec.block_size);
  }
  return spec.block_size / kernel_block_size;
}

// With a padded page every axis outside the page (outer to the innermost L/B axis) must be L, B or
// of size 1, else the padding would land in the middle of a page.
void check_padded_page_tail(const std::array<int, 5>& order,
                            const std::array<std::int64_t, 5>& shape, KVCacheLayout layout) {
  bool outside_page = false;
  for (int position = 4; position >= 0; --position) {
    const int axis = order[position];
    if (is_layer_or_block(axis)) {
      outside_page = true;
    } else if (outside_page && shape[axis] != 1) {
      fail(
          "Page padding requires dimensions outside the page tail to be L, B, or singleton; "
          "layout {} puts {} ({}) outside the page. Use a layout whose page tail holds it "
          "(e.g. LBNHC)",
          layout_name(layout), kAxisNames[axis], shape[axis]);
    }
  }
}

}  // namespace

std::array<std::int64_t, 5> compute_layout_strides(
    const KVCacheSpec& spec, std::int64_t num_blocks, int num_layers, KVCacheLayout layout,
    std::optional<int> kernel_block_size, std::array<std::optional<std::int64_t>, 5> fixed) {
  const int kernel_size = kernel_block_size.value_or(spec.block_size);
  const int ratio = split_ratio(spec, kernel_size);
  const bool padded = spec.is_padded();
  if (padded && ratio > 1) {
    fail(
        "a padded page ({} bytes, {} real) cannot be split into {} kernel blocks here; the views "
        "split padded pages by kernel-block geometry",
        spec.page_size_bytes(), spec.real_page_size_bytes(), ratio);
  }
  std::array<std::int64_t, 5> shape{};
  shape[kv_axis::L] = num_layers;
  shape[kv_axis::B] = checked_cast<std::int64_t>(
      checked_product("KV cache kernel blocks (blocks x kernel blocks per block)", num_blocks,
                      ratio),
      "KV cache kernel blocks");
  shape[kv_axis::H] = spec.num_heads();
  shape[kv_axis::N] = spec.num_kernel_states(kernel_size);
  shape[kv_axis::C] = spec.state_content_size_bytes();

  const std::array<int, 5> order = stride_order(layout);
  if (padded) check_padded_page_tail(order, shape, layout);

  std::array<std::int64_t, 5> strides{};
  std::int64_t running = 1;
  bool reached_page_edge = false;
  for (int position = 4; position >= 0; --position) {
    const int axis = order[position];
    if (padded && is_layer_or_block(axis) && !reached_page_edge) {
      reached_page_edge = true;
      running = spec.page_size_bytes();  // the real page (≤ padded) grows to the padded page
    }
    strides[axis] = fixed[axis].value_or(running);
    // A stride past 64 bits would wrap into a small, overlapping one.
    running = checked_cast<std::int64_t>(
        checked_product("KV cache byte stride (stride x extent)", strides[axis], shape[axis]),
        "KV cache byte stride");
  }
  return strides;
}

}  // namespace attnrt
