#pragma once
// Buffer: one owning allocation. Host buffers are 64-byte aligned and zero-filled (a KV cache must
// start clean: padded pages and unused slots are never written). Buffers of kHugePageBytes or
// more start on a huge-page boundary and ask the OS for huge pages (Linux: MADV_HUGEPAGE), so
// that a KV cache walked block by block through a block table costs no TLB miss per 4 KiB.
// Move-only; tensors share ownership through std::shared_ptr<Buffer>, so a view keeps its memory
// alive.

#include <cstddef>
#include <memory>

#include "attnrt/core/device.h"
#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API Buffer {
 public:
  static constexpr std::size_t kAlignment = 64;
  static constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

  // Allocates `size_bytes` zeroed bytes on `device`. Throws Error if the allocation fails or the
  // device is not available in this build.
  static std::shared_ptr<Buffer> allocate(std::size_t size_bytes, Device device = Device::cpu());
  // Memory someone else owns (a tensor imported through DLPack, an embedder's arena), neither
  // zeroed nor freed here: the buffer holds `owner` until it dies, and the owner releases the
  // memory. Throws Error for a null `data` with a non-zero size.
  static std::shared_ptr<Buffer> external(std::byte* data, std::size_t size_bytes, Device device,
                                          std::shared_ptr<void> owner);

  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  Device device() const { return device_; }
  bool owns_memory() const { return owner_ == nullptr; }

 private:
  Buffer(std::byte* data, std::size_t size, Device device)
      : data_(data), size_(size), device_(device) {}
  void release() noexcept;

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  Device device_;
  std::shared_ptr<void> owner_;  // set for external memory, which release() does not free
};

}  // namespace attnrt
