#pragma once
// How the reference kernels address one layer's paged KV cache view
// [kernel blocks, head slots, states, content] (DESIGN.md §3 "Memory"): a kernel slot is
// block * kernel_block_size + offset, K and V sit side by side along the content axis.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/core/tensor.h"

namespace attnrt::cpu_reference {

// Where a token's key and value live inside a head's content: K's head_size entries then V's
// head_size_v; MLA stores one latent vector whose first head_size_v entries are the value.
struct ContentLayout {
  int key_offset = 0;
  int key_size = 0;
  int value_offset = 0;
  int value_size = 0;

  static ContentLayout of(const AttentionShape& shape);
  int stored_size() const;  // content entries a token needs in the cache
};

class PagedKVCache {
 public:
  // Checks that `view` is a host, 4-D, floating-point view whose head slots and content hold
  // `shape`; `kernel` names the caller in errors. States carry one token each (tokens_per_state
  // 1), so the states axis is the kernel block size.
  PagedKVCache(const Tensor& view, const AttentionShape& shape, std::string_view kernel);

  DType dtype() const { return dtype_; }
  int kernel_block_size() const { return kernel_block_size_; }
  std::int64_t num_kernel_blocks() const { return num_kernel_blocks_; }
  std::int64_t num_slots() const { return num_kernel_blocks_ * kernel_block_size_; }
  const ContentLayout& content() const { return content_; }

  // Address of content entry `entry` of KV head `head` at kernel slot `slot` (unchecked).
  std::byte* entry(std::int64_t slot, int head, int entry) const;
  // Kernel slot of key position `position` of a request whose block-table row is `row`.
  std::int64_t slot_of(std::span<const std::int32_t> row, int position) const {
    return static_cast<std::int64_t>(row[position / kernel_block_size_]) * kernel_block_size_ +
           position % kernel_block_size_;
  }

  std::string describe() const;  // "4 kernel blocks of 16 tokens (float16)"

 private:
  std::byte* base_ = nullptr;
  DType dtype_ = DType::f32;
  std::int64_t element_size_ = 4;
  std::int64_t num_kernel_blocks_ = 0;
  int kernel_block_size_ = 1;
  std::int64_t block_stride_ = 0;  // strides in elements
  std::int64_t head_stride_ = 0;
  std::int64_t state_stride_ = 0;
  std::int64_t content_stride_ = 0;
  ContentLayout content_;
};

}  // namespace attnrt::cpu_reference
