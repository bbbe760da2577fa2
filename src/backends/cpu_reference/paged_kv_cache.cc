// Checks and addressing of a layer's KV cache view for the reference kernels. The view's own
// strides are followed as they are, so every layout and every kernel-block split is addressed by
// the same code.

#include "paged_kv_cache.h"

#include <fmt/format.h>

#include <algorithm>

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
  if (shape.type == AttentionType::encoder_only) {
    fail(
        "CPU_REFERENCE {}: encoder_only attention keeps no KV cache, and the kernel arguments "
        "carry keys only through the cache; choose another backend for encoder-only layers",
        kernel);
  }
  if (!view.defined() || view.dim() != 4) {
    fail(
        "CPU_REFERENCE {}: the KV cache must be a layer's 4-D view [kernel blocks, head slots, "
        "states, content], got {}; bind the layer's cache before running it",
        kernel, view.defined() ? view.describe() : std::string("no tensor"));
  }
  if (!view.device().is_cpu()) {
    fail("CPU_REFERENCE {}: the KV cache lives on {}, but this backend reads host memory", kernel,
         view.device().str());
  }
  if (!is_floating(view.dtype())) {
    fail(
        "CPU_REFERENCE {}: KV cache dtype {} is not a floating type; use float32, float16, "
        "bfloat16 or fp8_e4m3",
        kernel, dtype_name(view.dtype()));
  }
  if (view.size(1) < shape.num_kv_heads) {
    fail("CPU_REFERENCE {}: the KV cache has {} head slots but the layer has {} KV heads", kernel,
         view.size(1), shape.num_kv_heads);
  }
  if (view.size(3) < content_.stored_size()) {
    fail(
        "CPU_REFERENCE {}: the KV cache stores {} content entries per head and token, but the "
        "layer needs {} (head_size {}, head_size_v {})",
        kernel, view.size(3), content_.stored_size(), shape.head_size, shape.head_size_v);
  }
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
