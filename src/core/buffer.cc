#include "attnrt/core/buffer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/fail.h"

namespace attnrt {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Tensors address buffers with int64 byte offsets, so no buffer may be larger than that.
constexpr std::size_t kMaxBufferBytes =
    static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) - Buffer::kAlignment;

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t size_bytes, Device device) {
  if (!device.is_cpu()) {
    fail(
        "CUDA device {} is not available in this build (attnrt was built without CUDA); use "
        "device \"cpu\"",
        device.str());
  }
  if (size_bytes > kMaxBufferBytes) {
    fail(
        "cannot allocate a buffer of {} bytes ({:.1f} GiB): larger than the largest addressable "
        "buffer; lower the requested size",
        size_bytes, static_cast<double>(size_bytes) / kGiB);
  }
  // aligned_alloc wants a multiple of the alignment; an empty buffer still gets a valid pointer.
  const bool huge = size_bytes >= kHugePageBytes;
  const std::size_t alignment = huge ? kHugePageBytes : kAlignment;
  const std::size_t rounded =
      std::max<std::size_t>((size_bytes + alignment - 1) / alignment * alignment, alignment);
  auto* data = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
  if (data == nullptr) {
    fail(
        "out of host memory: cannot allocate {:.1f} MiB ({:.2f} GiB) for a buffer; lower the "
        "memory budget",
        static_cast<double>(size_bytes) / kMiB, static_cast<double>(size_bytes) / kGiB);
  }
#if defined(MADV_HUGEPAGE)
  // Before the first touch, so the zeroing below faults in huge pages. Only a hint: a kernel
  // without transparent huge pages leaves 4 KiB pages, which work the same, more slowly.
  if (huge) (void)madvise(data, rounded, MADV_HUGEPAGE);
#endif
  std::memset(data, 0, rounded);  // one pass over fresh pages
  return std::shared_ptr<Buffer>(new Buffer(data, size_bytes, device));
}

std::shared_ptr<Buffer> Buffer::external(std::byte* data, std::size_t size_bytes, Device device,
                                         std::shared_ptr<void> owner) {
  if (data == nullptr && size_bytes > 0) {
    fail("an external buffer of {} bytes needs its memory, got a null pointer", size_bytes);
  }
  if (size_bytes > kMaxBufferBytes) {
    fail("an external buffer of {} bytes is larger than the largest addressable buffer",
         size_bytes);
  }
  std::shared_ptr<Buffer> buffer(new Buffer(data, size_bytes, device));
  // A null owner would read as "owned here": keep a no-op token so release() never frees.
  buffer->owner_ = owner != nullptr ? std::move(owner) : std::make_shared<int>(0);
  return buffer;
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      device_(other.device_),
      owner_(std::move(other.owner_)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
    owner_ = std::move(other.owner_);
  }
  return *this;
}

Buffer::~Buffer() {
  release();
}

void Buffer::release() noexcept {
  if (owner_ != nullptr) {
    owner_.reset();  // the owner frees external memory
  } else {
    std::free(data_);  // host memory only until the CUDA build adds device allocations
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace attnrt
