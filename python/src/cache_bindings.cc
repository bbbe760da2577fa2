// attnrt.KVCache: a plan's KV cache allocated and bound, each layer's view exported without a
// copy. A DLPack capsule holds the cache's buffer alive, so a torch tensor outlives the KVCache.

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/attn_utils.h"
#include "bindings.h"
#include "loaded_model.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

// The capsule protocol of DLPack 0.6: named "dltensor" until a consumer takes it (and renames it
// "used_dltensor"); an untaken capsule frees the export itself.
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

// One layer's view, for any DLPack consumer (numpy.from_dlpack, torch.from_dlpack).
struct LayerView {
  Tensor tensor;
};

EngineConfig with_memory(EngineConfig config, std::optional<std::uint64_t> memory) {
  if (memory) config.cache.memory = *memory;
  validate_config(config);
  return config;
}

class KVCache {
 public:
  KVCache(const PyConfigPtr& loaded, std::optional<std::uint64_t> memory)
      : config_(with_memory(loaded->config, memory)),
        plan_(plan_attention(config_, backend_registry_for(config_))),
        allocation_(allocate_kv_cache(plan_.kv.kv_cache_config, Device::cpu(),
                                      plan_.backends.kernel_block_sizes)) {
    bind_kv_caches(allocation_.views, plan_.kv.forward_context, plan_.kv.kv_cache_config, config_,
                   plan_.backends.attn_groups);
  }

  std::vector<std::string> layers() const {
    std::vector<std::string> names;
    for (const AttentionLayer& layer : plan_.kv.forward_context.layers()) {
      if (layer.has_kv_cache()) names.push_back(layer.name());
    }
    return names;
  }

  const Tensor& view(const std::string& name) const {
    const AttentionLayer* layer = plan_.kv.forward_context.find(name);
    if (layer == nullptr || !layer->has_kv_cache()) {
      throw Error("KVCache: layer '" + name + "' has no KV cache view; see KVCache.layers");
    }
    return layer->kv_cache();
  }

  std::int64_t num_blocks() const { return allocation_.num_blocks; }
  std::uint64_t backing_bytes() const { return plan_.kv.kv_cache_config.backing_bytes(); }
  std::uintptr_t backing_address() const {
    return reinterpret_cast<std::uintptr_t>(allocation_.backing->data());
  }

 private:
  EngineConfig config_;
  AttentionPlan plan_;
  KVCacheAllocation allocation_;
};

}  // namespace

void bind_cache(py::module_& module) {
  py::class_<LayerView>(module, "LayerView", "One layer's KV cache view, a DLPack producer.")
      .def(
          "__dlpack__",
          [](const LayerView& v, py::object /*stream*/) { return dlpack_capsule(v.tensor); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const LayerView&) { return py::make_tuple(1, 0); })  // kDLCPU
      .def_property_readonly("shape", [](const LayerView& v) { return v.tensor.shape(); })
      .def_property_readonly("strides", [](const LayerView& v) { return v.tensor.strides(); })
      .def_property_readonly(
          "dtype", [](const LayerView& v) { return std::string(dtype_name(v.tensor.dtype())); })
      .def_property_readonly("data_ptr", [](const LayerView& v) {
        return reinterpret_cast<std::uintptr_t>(v.tensor.data());
      });
  py::class_<KVCache>(module, "_KVCache")
      .def(py::init<const PyConfigPtr&, std::optional<std::uint64_t>>(), py::arg("config"),
           py::arg("memory") = py::none())
      .def_property_readonly("layers", &KVCache::layers)
      .def_property_readonly("num_blocks", &KVCache::num_blocks)
      .def_property_readonly("backing_bytes", &KVCache::backing_bytes)
      .def_property_readonly("backing_address", &KVCache::backing_address)
      .def(
          "view",
          [](const KVCache& cache, const std::string& name) { return LayerView{cache.view(name)}; },
          py::arg("name"))
      .def(
          "_capsule",
          [](const KVCache& cache, const std::string& name) {
            return dlpack_capsule(cache.view(name));
          },
          py::arg("name"));
}

}  // namespace attnrt::python
