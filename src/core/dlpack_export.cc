// Tensor::to_dlpack, kept apart from the view logic: the DLPack 0.6 (DLManagedTensor) contract.

#include <memory>
#include <vector>

#include "attnrt/core/tensor.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// Owns everything the exported DLTensor points into; the DLManagedTensor lives inside it, so the
// deleter frees both at once, and the buffer stays alive until the consumer calls it.
struct ExportContext {
  std::shared_ptr<Buffer> buffer;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLManagedTensor managed{};
};

void delete_export_context(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
}

DLDataType dlpack_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {kDLFloat, 32, 1};
    case DType::f16:
      return {kDLFloat, 16, 1};
    case DType::bf16:
      return {kDLBfloat, 16, 1};
    // DLPack 0.6 has no fp8 type code: fp8 bytes travel as uint8 and the consumer reinterprets
    // them (e.g. torch's .view(torch.float8_e4m3fn)).
    case DType::fp8_e4m3:
      return {kDLUInt, 8, 1};
    case DType::int8:
      return {kDLInt, 8, 1};
    case DType::int32:
      return {kDLInt, 32, 1};
    case DType::int64:
      return {kDLInt, 64, 1};
  }
  fail("invalid DType value {}", static_cast<int>(dtype));
}

DLDevice dlpack_device(Device device) {
  if (device.is_cpu()) return {kDLCPU, 0};
  return {kDLCUDA, device.index};
}

}  // namespace

DLManagedTensor* Tensor::to_dlpack() const {
  if (!defined()) fail("to_dlpack on an undefined (default-constructed) tensor");
  auto context = std::make_unique<ExportContext>();
  context->buffer = buffer_;
  context->shape = shape_;
  context->strides = strides_;  // DLPack strides are in elements, as ours are
  DLTensor& tensor = context->managed.dl_tensor;
  tensor.data = buffer_->data();
  tensor.device = dlpack_device(buffer_->device());
  tensor.ndim = static_cast<int>(shape_.size());
  tensor.dtype = dlpack_dtype(dtype_);
  tensor.shape = context->shape.data();
  tensor.strides = context->strides.data();
  tensor.byte_offset = static_cast<std::uint64_t>(byte_offset_);
  context->managed.manager_ctx = context.get();
  context->managed.deleter = &delete_export_context;
  return &context.release()->managed;
}

}  // namespace attnrt
