#pragma once
// The typed views of a state layer's page (SEMANTICS §4.4). A state layer's KV cache view is its
// page as bytes, int8 [blocks, 1, 1, page bytes]; its state tensors lie one after another at the
// start of the page (conv state first), so state i of block b is a [shape...] tensor at byte
// page_offset + b × block stride + Σ bytes of the states before it. The padding stays at the end.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/core/export.h"
#include "attnrt/core/tensor.h"
#include "attnrt/kv/state_shapes.h"

namespace attnrt {

struct StateViewGeometry {
  DType dtype = DType::bf16;
  std::int64_t byte_offset = 0;       // of element [0, 0, ...] in the backing
  std::vector<std::int64_t> shape;    // [blocks, state shape...]
  std::vector<std::int64_t> strides;  // in elements; the state itself is contiguous
};

// The views of `states` over `num_blocks` pages of `block_stride_bytes`, the first starting at
// `page_offset`. Throws Error when a state does not start on a whole element of its dtype.
ATTNRT_API std::vector<StateViewGeometry> plan_state_views(std::span<const StateTensor> states,
                                                           std::int64_t num_blocks,
                                                           std::int64_t page_offset,
                                                           std::int64_t block_stride_bytes);

// The typed tensors of a bound page view (int8 [blocks, 1, 1, page bytes]), aliasing its bytes.
// Throws Error when the view is not a page view that holds `states`.
ATTNRT_API std::vector<Tensor> split_state_page_view(const Tensor& page_view,
                                                     std::span<const StateTensor> states);

}  // namespace attnrt
