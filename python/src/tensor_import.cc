#include "tensor_import.h"

#include <fmt/format.h>

#include <string>

#include "attnrt/core/error.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

[[noreturn]] void refuse(std::string_view what, const std::string& why) {
  throw Error(fmt::format("{}: {}", what, why));
}

DType dtype_of_span(const std::int32_t*) {
  return DType::int32;
}
DType dtype_of_span(const std::int64_t*) {
  return DType::int64;
}

}  // namespace

Tensor import_tensor(py::handle object, std::string_view what) {
  if (object.is_none() || !py::hasattr(object, "__dlpack__")) {
    refuse(what, fmt::format("expected a torch.Tensor or numpy.ndarray (an object with "
                             "__dlpack__), got {}",
                             std::string(py::str(py::type::of(object).attr("__name__")))));
  }
  py::object capsule;
  try {
    capsule = object.attr("__dlpack__")();
  } catch (py::error_already_set& raised) {
    // The producer's own message, without the traceback error_already_set appends.
    refuse(what, fmt::format("cannot be exported without a copy ({}); pass tensor.detach()",
                             std::string(py::str(raised.value()))));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    refuse(what, "its __dlpack__ returned no DLPack capsule");
  }
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");  // ours now: the capsule must not free it
  try {
    return Tensor::from_dlpack(managed);
  } catch (const Error& error) {
    refuse(what, error.what());
  }
}

template <typename T>
std::span<const T> int_array(const Tensor& tensor, std::string_view what) {
  const DType want = dtype_of_span(static_cast<const T*>(nullptr));
  if (tensor.dtype() != want || tensor.dim() != 1) {
    refuse(what,
           fmt::format("expected a 1-D {} array, got {}", dtype_name(want), tensor.describe()));
  }
  if (tensor.size(0) > 1 && tensor.stride(0) != 1) {
    refuse(what, fmt::format("expected a contiguous array, got stride {}; pass .contiguous()",
                             tensor.stride(0)));
  }
  return {tensor.data_as<const T>(), static_cast<std::size_t>(tensor.size(0))};
}

template std::span<const std::int32_t> int_array(const Tensor&, std::string_view);
template std::span<const std::int64_t> int_array(const Tensor&, std::string_view);

ActivationView activation_rows(const Tensor& tensor, std::string_view what,
                               std::vector<float>& scratch, bool load) {
  if (tensor.dim() != 3) {
    refuse(what, fmt::format("expected [tokens, heads, head size], got {}", tensor.describe()));
  }
  const DType dtype = tensor.dtype();
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16) {
    refuse(what, fmt::format("dtype {} is not float32, float16 or bfloat16", dtype_name(dtype)));
  }
  if (tensor.size(2) > 1 && tensor.stride(2) != 1) {
    refuse(what, fmt::format("the last axis has stride {}, and rows are read in place only with "
                             "stride 1; pass .contiguous()",
                             tensor.stride(2)));
  }
  ActivationView rows;
  rows.num_tokens = static_cast<int>(tensor.size(0));
  rows.num_heads = static_cast<int>(tensor.size(1));
  rows.head_size = static_cast<int>(tensor.size(2));
  if (dtype == DType::f32) {
    rows.data = tensor.data_as<float>();
    rows.token_stride = tensor.stride(0);
    rows.head_stride = tensor.stride(1);
    return rows;
  }
  scratch.resize(static_cast<std::size_t>(tensor.numel()));
  rows.data = scratch.data();
  rows.head_stride = rows.head_size;
  rows.token_stride = static_cast<std::int64_t>(rows.num_heads) * rows.head_size;
  if (!load) return rows;
  const auto element = static_cast<std::int64_t>(dtype_size(dtype));
  for (int t = 0; t < rows.num_tokens; ++t) {
    for (int h = 0; h < rows.num_heads; ++h) {
      const std::byte* source =
          tensor.data() + (t * tensor.stride(0) + h * tensor.stride(1)) * element;
      float* target = rows.row(t, h);
      for (int i = 0; i < rows.head_size; ++i)
        target[i] = load_as_float(dtype, source + i * element);
    }
  }
  return rows;
}

void store_rows(const ActivationView& rows, const Tensor& tensor) {
  const DType dtype = tensor.dtype();
  if (dtype == DType::f32) return;
  const auto element = static_cast<std::int64_t>(dtype_size(dtype));
  for (int t = 0; t < rows.num_tokens; ++t) {
    for (int h = 0; h < rows.num_heads; ++h) {
      std::byte* target = tensor.data() + (t * tensor.stride(0) + h * tensor.stride(1)) * element;
      const float* source = rows.row(t, h);
      for (int i = 0; i < rows.head_size; ++i)
        store_from_float(dtype, target + i * element, source[i]);
    }
  }
}

}  // namespace attnrt::python
