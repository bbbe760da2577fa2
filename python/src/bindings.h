#pragma once
// The pieces of the _attnrt extension module, one function per concept file.

#include <pybind11/pybind11.h>

namespace attnrt::python {

void bind_config(pybind11::module_& module);          // config_bindings.cc
void bind_tensor_view(pybind11::module_& module);     // tensor_export.cc
void bind_plan(pybind11::module_& module);            // plan_bindings.cc
void bind_cache(pybind11::module_& module);           // cache_bindings.cc
void bind_seed_functions(pybind11::module_& module);  // seed_bindings.cc
void bind_attention(pybind11::module_& module);       // attention_bindings.cc
void bind_wrapper(pybind11::module_& module);         // wrapper_bindings.cc
void bind_step_inputs(pybind11::module_& module);     // step_bindings.cc

}  // namespace attnrt::python
