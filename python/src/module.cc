// _attnrt: the C++ side of `import attnrt` (python/attnrt/ wraps it). attnrt::Error surfaces as
// attnrt.Error, a ValueError carrying the library's one-line message.

#include <pybind11/pybind11.h>

#include "attnrt/core/error.h"
#include "attnrt/version.h"
#include "bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_attnrt, module) {
  module.doc() = "attnrt: paged-KV attention planning and CPU kernels (C++ core of `attnrt`)";
  module.attr("__version__") = std::string(attnrt::version());
  static py::exception<attnrt::Error> error(module, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const attnrt::Error& caught) {
      PyErr_SetString(error.ptr(), caught.what());
    }
  });
  attnrt::python::bind_tensor_view(module);
  attnrt::python::bind_config(module);
  attnrt::python::bind_plan(module);
  attnrt::python::bind_cache(module);
  attnrt::python::bind_seed_functions(module);
  attnrt::python::bind_attention(module);
  attnrt::python::bind_wrapper(module);
  attnrt::python::bind_step_inputs(module);
}
