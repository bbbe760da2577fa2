#pragma once
// Tensors to Python without copies: a DLPack capsule of an attnrt::Tensor, and TensorView, a
// DLPack producer (numpy.from_dlpack, torch.from_dlpack) that keeps the tensor's memory alive.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "attnrt/core/tensor.h"

namespace attnrt::python {

// DLPack 0.6's capsule protocol: named "dltensor" until a consumer takes it (renaming it
// "used_dltensor"); an untaken capsule frees the export itself.
pybind11::capsule dlpack_capsule(const Tensor& tensor);

struct TensorView {
  Tensor tensor;
};

// A tensor over `values`, memory that `owner` keeps alive (an object whose buffers are stable).
template <typename T>
Tensor borrowed_tensor(std::span<const T> values, std::vector<std::int64_t> shape,
                       std::vector<std::int64_t> strides, std::shared_ptr<void> owner);

}  // namespace attnrt::python
