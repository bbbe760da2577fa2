#include "tensor_export.h"

#include <pybind11/stl.h>

#include <string>

namespace py = pybind11;

namespace attnrt::python {
namespace {

template <typename T>
constexpr DType dtype_for();
template <>
constexpr DType dtype_for<std::int32_t>() {
  return DType::int32;
}
template <>
constexpr DType dtype_for<std::int64_t>() {
  return DType::int64;
}

}  // namespace

py::capsule dlpack_capsule(const Tensor& tensor) {
  DLManagedTensor* managed = tensor.to_dlpack();
  // torch 1.13 reads `data` and ignores byte_offset: point at element 0 directly.
  managed->dl_tensor.data =
      static_cast<char*>(managed->dl_tensor.data) + managed->dl_tensor.byte_offset;
  managed->dl_tensor.byte_offset = 0;
  return py::capsule(managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* untaken = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      untaken->deleter(untaken);
    }
  });
}

template <typename T>
Tensor borrowed_tensor(std::span<const T> values, std::vector<std::int64_t> shape,
                       std::vector<std::int64_t> strides, std::shared_ptr<void> owner) {
  // The kernels never write these views; DLPack has no read-only flag, so consumers could.
  auto* data = reinterpret_cast<std::byte*>(const_cast<T*>(values.data()));
  auto buffer = Buffer::external(data, values.size_bytes(), Device::cpu(), std::move(owner));
  return Tensor(std::move(buffer), dtype_for<T>(), std::move(shape), std::move(strides));
}

template Tensor borrowed_tensor(std::span<const std::int32_t>, std::vector<std::int64_t>,
                                std::vector<std::int64_t>, std::shared_ptr<void>);
template Tensor borrowed_tensor(std::span<const std::int64_t>, std::vector<std::int64_t>,
                                std::vector<std::int64_t>, std::shared_ptr<void>);

void bind_tensor_view(py::module_& module) {
  py::class_<TensorView>(module, "TensorView",
                         "A view of attnrt memory (a layer's KV cache, a block table), a DLPack "
                         "producer that keeps the memory alive.")
      .def(
          "__dlpack__",
          [](const TensorView& v, const py::object& /*stream*/) {
            return dlpack_capsule(v.tensor);
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const TensorView&) { return py::make_tuple(1, 0); })  // kDLCPU
      .def_property_readonly("shape", [](const TensorView& v) { return v.tensor.shape(); })
      .def_property_readonly("strides", [](const TensorView& v) { return v.tensor.strides(); })
      .def_property_readonly(
          "dtype", [](const TensorView& v) { return std::string(dtype_name(v.tensor.dtype())); })
      .def_property_readonly("data_ptr", [](const TensorView& v) {
        return reinterpret_cast<std::uintptr_t>(v.tensor.data());
      });
}

}  // namespace attnrt::python
