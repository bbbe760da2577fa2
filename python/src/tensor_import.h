#pragma once
// Tensors from Python without copies: anything with __dlpack__ (torch.Tensor, numpy.ndarray) is
// imported as an attnrt::Tensor over the producer's memory, and the kernels' operands are cut
// from it. The stride rules (what is read in place, what is refused) live here, in one place.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/core/tensor.h"

namespace attnrt::python {

// `object` through its __dlpack__ (the GIL held). Throws Error naming `what` for an object
// without one, a producer that refuses (torch: a tensor that requires grad) or a tensor attnrt
// cannot view (device, dtype, negative strides).
Tensor import_tensor(pybind11::handle object, std::string_view what);

// A 1-D array of `dtype` with unit stride (or at most one element), as a span.
template <typename T>
std::span<const T> int_array(const Tensor& tensor, std::string_view what);

// Rows [tokens, heads, size] for the kernels. float32 with a unit innermost stride is used in
// place (any token and head strides); float16 and bfloat16 are converted to float32 in `scratch`
// (the kernels compute in float32) — read in now if `load`, written back by `store_rows`.
// Anything else (an innermost stride other than 1, another dtype, not 3-D) is refused, never
// silently copied.
ActivationView activation_rows(const Tensor& tensor, std::string_view what,
                               std::vector<float>& scratch, bool load);
// Writes float32 rows computed into `scratch` back into `tensor` (float16/bfloat16); nothing
// for a float32 tensor used in place.
void store_rows(const ActivationView& rows, const Tensor& tensor);

}  // namespace attnrt::python
