// Checks and addressing of a layer's KV cache view for the reference kernels. The view's own
// strides are followed as they are, so every layout and every kernel-block split is addressed by
// the same code.

#include "paged_kv_cache.h"

#include <fmt/format.h>

#include <algorithm>

#include "../cpu_backend_checks.h"
#include "attnrt/core/error.h"

namespace attnrt::cpu_reference {

ContentLayout ContentLayout::of(const AttentionShape& shape) {
  if (shape.type == AttentionType::mla) {
    return ContentLayout{0, shape.head_size, 0, shape.head_size_v};
  }
  return ContentLayout{0, shape.head_size, shape.head_size, shape.head_size_v};
}

int ContentLayout::stored_size() const {
  return std::max(key_offset + key_size, value_offset + value_size);
}

PagedKVCache::PagedKVCache(const Tensor& view, const AttentionShape& shape, std::string_view kernel)
    : content_(ContentLayout::of(shape)) {
  backend_checks::check_cache_view("CPU_REFERENCE", kernel, view, shape, content_.stored_size(),
                                   /*contiguous_content=*/false);
  base_ = view.data();
  dtype_ = view.dtype();
  element_size_ = static_cast<std::int64_t>(dtype_size(dtype_));
  num_kernel_blocks_ = view.size(0);
  kernel_block_size_ = static_cast<int>(view.size(2));
  block_stride_ = view.stride(0);
  head_stride_ = view.stride(1);
  state_stride_ = view.stride(2);
  content_stride_ = view.stride(3);
}

std::byte* PagedKVCache::entry(std::int64_t slot, int head, int entry) const {
  const std::int64_t block = slot / kernel_block_size_;
  const std::int64_t state = slot % kernel_block_size_;
  const std::int64_t element =
      block * block_stride_ + head * head_stride_ + state * state_stride_ + entry * content_stride_;
  return base_ + element * element_size_;
}

std::string PagedKVCache::describe() const {
  return fmt::format("{} kernel blocks of {} tokens ({})", num_kernel_blocks_, kernel_block_size_,
                     dtype_name(dtype_));
}

}  // namespace attnrt::cpu_reference
