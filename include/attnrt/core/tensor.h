#pragma once
// Tensor: a non-owning strided view over a Buffer (dtype, shape, strides in elements, byte offset).
// Views share the buffer's ownership; reshaping, permuting and selecting never copy. Element
// access through `at`/`get`/`set` is bounds-checked and meant for tests and control code, not
// kernels (kernels take `data()` and the strides).

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnrt/core/buffer.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API Tensor {
 public:
  Tensor() = default;
  // Throws Error if any element the view addresses lies outside the buffer.
  Tensor(std::shared_ptr<Buffer> buffer, DType dtype, std::vector<std::int64_t> shape,
         std::vector<std::int64_t> strides, std::int64_t byte_offset = 0);

  // A new zero-filled, contiguous tensor in its own buffer.
  static Tensor zeros(DType dtype, std::vector<std::int64_t> shape, Device device = Device::cpu());

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const;
  const std::vector<std::int64_t>& shape() const { return shape_; }
  const std::vector<std::int64_t>& strides() const { return strides_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t size(std::int64_t d) const;
  std::int64_t stride(std::int64_t d) const;
  std::int64_t numel() const;
  std::int64_t byte_offset() const { return byte_offset_; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  bool is_contiguous() const;

  // Address of element [0, ..., 0].
  std::byte* data() const;
  template <typename T>
  T* data_as() const {
    return reinterpret_cast<T*>(data());
  }

  // Bytes [first, last) of the buffer that the view can address (empty view: first == last).
  std::int64_t first_byte() const;
  std::int64_t end_byte() const;

  // Same elements, new shape; the view must be contiguous.
  Tensor view(std::vector<std::int64_t> shape) const;
  // Axes reordered: result axis i is this axis dims[i].
  Tensor permute(std::span<const int> dims) const;
  Tensor permute(std::initializer_list<int> dims) const;
  // Drops axis `d`, fixing it at `index`.
  Tensor select(std::int64_t d, std::int64_t index) const;
  // Axis `d` restricted to [start, end).
  Tensor slice(std::int64_t d, std::int64_t start, std::int64_t end) const;
  // The same bytes as another dtype: the last axis must be contiguous and its byte size divisible
  // by the new element size; every other stride must stay a whole number of new elements.
  Tensor reinterpret(DType dtype) const;

  // Bounds-checked element access (Error on a bad index or a T of the wrong size).
  template <typename T>
  T& at(std::span<const std::int64_t> index) const {
    return *reinterpret_cast<T*>(element_address(index, sizeof(T)));
  }
  template <typename T>
  T& at(std::initializer_list<std::int64_t> index) const {
    return at<T>(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  float get(std::initializer_list<std::int64_t> index) const;
  void set(std::initializer_list<std::int64_t> index, float value) const;

  // Exports the view for PyTorch/JAX/CuPy. The returned tensor holds the buffer alive until its
  // deleter runs.
  DLManagedTensor* to_dlpack() const;
  // Imports a DLPack 0.6 tensor without a copy, taking ownership: the producer's deleter runs
  // when the last view of the result dies, or at once if the import throws. Host memory only
  // (kDLCPU, kDLCUDAHost); one lane of float32/16, bfloat16, int8/32/64, or uint8 read as
  // fp8_e4m3 (what to_dlpack exports for fp8). Throws Error naming the unsupported device,
  // dtype or stride.
  static Tensor from_dlpack(DLManagedTensor* managed);

  std::string describe() const;  // "bfloat16[4, 2, 16, 64] strides [...] offset N"

 private:
  std::byte* element_address(std::span<const std::int64_t> index, std::size_t element_size) const;

  std::shared_ptr<Buffer> buffer_;
  DType dtype_ = DType::f32;
  std::vector<std::int64_t> shape_;
  std::vector<std::int64_t> strides_;
  std::int64_t byte_offset_ = 0;
};

}  // namespace attnrt
