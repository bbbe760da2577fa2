// Tensor::from_dlpack: a producer's DLManagedTensor viewed as a Tensor over external memory. The
// Buffer holds the managed tensor and calls its deleter when the last view dies.

#include <memory>
#include <vector>

#include "attnrt/core/tensor.h"
#include "core/fail.h"

namespace attnrt {
namespace {

DType dtype_of(const DLDataType& type) {
  if (type.lanes != 1)
    fail("DLPack import: vector dtypes ({} lanes) are not supported", type.lanes);
  const int code = type.code;
  const int bits = type.bits;
  if (code == kDLFloat && bits == 32) return DType::f32;
  if (code == kDLFloat && bits == 16) return DType::f16;
  if (code == kDLBfloat && bits == 16) return DType::bf16;
  if (code == kDLInt && bits == 8) return DType::int8;
  if (code == kDLInt && bits == 32) return DType::int32;
  if (code == kDLInt && bits == 64) return DType::int64;
  // DLPack 0.6 has no fp8 code, so fp8 travels as uint8 (see to_dlpack).
  if (code == kDLUInt && bits == 8) return DType::fp8_e4m3;
  constexpr std::string_view kCodeNames[] = {"int", "uint", "float", "opaque", "bfloat", "complex"};
  const std::string_view kind =
      code >= 0 && code < 6 ? kCodeNames[code] : std::string_view("type code ");
  fail(
      "DLPack import: dtype {}{} (code {}) is not supported; use float32, float16, bfloat16, "
      "int8, int32, int64 or uint8 (fp8_e4m3 bytes)",
      kind, bits, code);
}

std::vector<std::int64_t> strides_of(const DLTensor& tensor) {
  std::vector<std::int64_t> strides(static_cast<std::size_t>(tensor.ndim));
  if (tensor.strides != nullptr) {
    for (int d = 0; d < tensor.ndim; ++d) strides[d] = tensor.strides[d];
    return strides;
  }
  std::int64_t step = 1;  // no strides: compact row-major
  for (int d = tensor.ndim - 1; d >= 0; --d) {
    strides[d] = step;
    step *= std::max<std::int64_t>(tensor.shape[d], 1);
  }
  return strides;
}

// Bytes from element 0 to the end of the last element the view addresses (0 when empty).
std::int64_t extent_bytes(const std::vector<std::int64_t>& shape,
                          const std::vector<std::int64_t>& strides, std::int64_t element_size) {
  std::int64_t last = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) fail("DLPack import: axis {} has negative size {}", d, shape[d]);
    if (strides[d] < 0) {
      fail("DLPack import: axis {} has negative stride {}; negative strides are not supported", d,
           strides[d]);
    }
    if (shape[d] == 0) return 0;
    std::int64_t step = 0;
    if (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      fail("DLPack import: the view's extent overflows int64");
    }
  }
  std::int64_t bytes = 0;
  if (__builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, element_size, &bytes)) {
    fail("DLPack import: the view's extent overflows int64");
  }
  return bytes;
}

}  // namespace

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
  if (managed == nullptr) fail("DLPack import: got a null DLManagedTensor");
  // Owned from here on, so every throw below still hands the tensor back to its producer.
  std::shared_ptr<DLManagedTensor> owner(managed, [](DLManagedTensor* self) {
    if (self->deleter != nullptr) self->deleter(self);
  });
  const DLTensor& tensor = managed->dl_tensor;
  if (tensor.device.device_type != kDLCPU && tensor.device.device_type != kDLCUDAHost) {
    fail("DLPack import: the tensor lives on device type {} (id {}); attnrt reads host memory",
         static_cast<int>(tensor.device.device_type), tensor.device.device_id);
  }
  if (tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape == nullptr)) {
    fail("DLPack import: {} axes without a shape array", tensor.ndim);
  }
  const DType dtype = dtype_of(tensor.dtype);
  std::vector<std::int64_t> shape(tensor.shape, tensor.shape + tensor.ndim);
  std::vector<std::int64_t> strides = strides_of(tensor);
  const std::int64_t bytes =
      extent_bytes(shape, strides, static_cast<std::int64_t>(dtype_size(dtype)));
  std::byte* first = static_cast<std::byte*>(tensor.data) + tensor.byte_offset;
  if (first == nullptr && bytes > 0) fail("DLPack import: a non-empty tensor with no data");
  auto buffer =
      Buffer::external(first, static_cast<std::size_t>(bytes), Device::cpu(), std::move(owner));
  return Tensor(std::move(buffer), dtype, std::move(shape), std::move(strides));
}

}  // namespace attnrt
