// attnrt.KVCache: a plan's KV cache allocated and bound (BoundKVCache), each layer's view
// exported without a copy. The capsule holds the cache's buffer, so a tensor outlives the cache.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "bound_cache.h"
#include "tensor_export.h"

namespace py = pybind11;

namespace attnrt::python {

void bind_cache(py::module_& module) {
  py::class_<BoundKVCache, std::shared_ptr<BoundKVCache>>(module, "_KVCache")
      .def(py::init<const PyConfigPtr&, std::optional<std::uint64_t>>(), py::arg("config"),
           py::arg("memory") = py::none())
      .def_property_readonly("layers", &BoundKVCache::layers)
      .def_property_readonly("num_blocks", &BoundKVCache::num_blocks)
      .def_property_readonly("backing_bytes", &BoundKVCache::backing_bytes)
      .def_property_readonly("backing_address", &BoundKVCache::backing_address)
      .def(
          "view",
          [](const BoundKVCache& cache, const std::string& name) {
            return TensorView{cache.view(name)};
          },
          py::arg("name"))
      .def(
          "_capsule",
          [](const BoundKVCache& cache, const std::string& name) {
            return dlpack_capsule(cache.view(name));
          },
          py::arg("name"));
}

}  // namespace attnrt::python
