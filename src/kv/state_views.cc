// Typed views of state pages (SEMANTICS §4.4): each state tensor of a page, across every block.

#include "attnrt/kv/state_views.h"

#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {
namespace {

std::int64_t whole_elements(std::int64_t bytes, DType dtype, std::string_view what) {
  const auto size = static_cast<std::int64_t>(dtype_size(dtype));
  if (bytes % size != 0) {
    fail("state view: {} of {} bytes is not a whole number of {} elements", what, bytes,
         dtype_name(dtype));
  }
  return bytes / size;
}

}  // namespace

std::vector<StateViewGeometry> plan_state_views(std::span<const StateTensor> states,
                                                std::int64_t num_blocks, std::int64_t page_offset,
                                                std::int64_t block_stride_bytes) {
  std::vector<StateViewGeometry> views;
  std::int64_t offset_in_page = 0;
  for (const StateTensor& state : states) {
    StateViewGeometry view;
    view.dtype = state.dtype;
    view.byte_offset = checked_cast<std::int64_t>(
        checked_add(static_cast<std::uint64_t>(page_offset),
                    static_cast<std::uint64_t>(offset_in_page), "state view offset"),
        "state view offset");
    (void)whole_elements(view.byte_offset, state.dtype, "the state's offset");
    view.shape.push_back(num_blocks);
    view.shape.insert(view.shape.end(), state.shape.begin(), state.shape.end());
    view.strides.assign(view.shape.size(), 1);
    for (std::size_t d = view.shape.size() - 1; d > 1; --d) {
      view.strides[d - 1] = view.strides[d] * view.shape[d];  // the state is row-major
    }
    view.strides[0] = whole_elements(block_stride_bytes, state.dtype, "the block stride");
    views.push_back(std::move(view));
    offset_in_page += state.bytes();
  }
  return views;
}

std::vector<Tensor> split_state_page_view(const Tensor& page_view,
                                          std::span<const StateTensor> states) {
  const std::int64_t page_bytes = state_page_bytes(states);
  if (page_view.dim() != 4 || page_view.dtype() != DType::int8 || page_view.size(1) != 1 ||
      page_view.size(2) != 1 || page_view.size(3) < page_bytes || page_view.stride(3) != 1) {
    fail("state view: {} is not a page view int8[blocks, 1, 1, >= {}] of this state",
         page_view.describe(), page_bytes);
  }
  std::vector<Tensor> tensors;
  for (const StateViewGeometry& view :
       plan_state_views(states, page_view.size(0), page_view.byte_offset(), page_view.stride(0))) {
    tensors.emplace_back(page_view.buffer(), view.dtype, view.shape, view.strides,
                         view.byte_offset);
  }
  return tensors;
}

}  // namespace attnrt
