// attnrt.load_config: an attnrt config or a Hugging Face config.json (a path, a model folder, or
// JSON text the Python side made from a dict), with vLLM's engine arguments as keywords.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "attnrt/config/config_loader.h"
#include "attnrt/config/model_source.h"
#include "attnrt/core/error.h"
#include "bindings.h"
#include "loaded_model.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

EngineArgs engine_args(const py::kwargs& kwargs) {
  EngineArgs args;
  for (const auto& [key_object, value] : kwargs) {
    const std::string key = py::cast<std::string>(key_object);
    if (value.is_none()) continue;
    if (key == "max_model_len") {
      args.max_model_len = py::cast<int>(value);
    } else if (key == "tensor_parallel_size") {
      args.tensor_parallel_size = py::cast<int>(value);
    } else if (key == "block_size") {
      args.block_size = py::cast<int>(value);
    } else if (key == "kv_cache_dtype") {
      args.kv_cache_dtype = py::cast<std::string>(value);
    } else if (key == "num_gpu_blocks_override") {
      args.num_gpu_blocks_override = py::cast<std::int64_t>(value);
    } else if (key == "kv_sharing_fast_prefill") {
      args.kv_sharing_fast_prefill = py::cast<bool>(value);
    } else if (key == "enable_prefix_caching") {
      args.enable_prefix_caching = py::cast<bool>(value);
    } else if (key == "mamba_cache_mode") {
      args.mamba_cache_mode = py::cast<std::string>(value);
    } else if (key == "max_num_seqs") {
      args.max_num_seqs = py::cast<int>(value);
    } else if (key == "max_num_batched_tokens") {
      args.max_num_batched_tokens = py::cast<int>(value);
    } else if (key == "memory") {
      args.memory = py::cast<std::uint64_t>(value);
    } else {
      throw Error("load_config: unknown keyword argument '" + key +
                  "'; expected max_model_len, tensor_parallel_size, block_size, kv_cache_dtype, "
                  "num_gpu_blocks_override, kv_sharing_fast_prefill, enable_prefix_caching, "
                  "mamba_cache_mode, max_num_seqs, max_num_batched_tokens or memory");
    }
  }
  return args;
}

PyConfigPtr load_path(const std::string& path, const py::kwargs& kwargs) {
  const EngineArgs args = engine_args(kwargs);
  py::gil_scoped_release release;
  LoadedModel model = load_model(path, args);
  return std::make_shared<PyConfig>(PyConfig{std::move(model.config), std::move(model.hf)});
}

// A dict, as JSON text: an attnrt config, or a Hugging Face config.json.
PyConfigPtr load_text(const std::string& text, const py::kwargs& kwargs) {
  const EngineArgs args = engine_args(kwargs);
  const nlohmann::json value = parse_hf_config_text(text);
  if (is_hf_config(value)) {
    HfImport hf = import_hf_model(value, ImportOptions{args});
    EngineConfig config = hf.config;
    return std::make_shared<PyConfig>(PyConfig{std::move(config), std::move(hf)});
  }
  EngineConfig config = load_config_json(value);
  apply_engine_args(config, args, config.cache.dtype);
  validate_config(config);
  return std::make_shared<PyConfig>(PyConfig{std::move(config), std::nullopt});
}

}  // namespace

void bind_config(py::module_& module) {
  py::class_<PyConfig, PyConfigPtr>(module, "Config", "A loaded, validated engine config.")
      .def_property_readonly("name", [](const PyConfig& c) { return c.config.model.name; })
      .def_property_readonly("max_model_len",
                             [](const PyConfig& c) { return c.config.model.max_model_len; })
      .def_property_readonly(
          "tensor_parallel_size",
          [](const PyConfig& c) { return c.config.parallel.tensor_parallel_size; })
      .def_property_readonly("block_size",
                             [](const PyConfig& c) { return c.config.cache.block_size; })
      .def_property_readonly("memory", [](const PyConfig& c) { return c.config.cache.memory; })
      .def_property_readonly("layer_names",
                             [](const PyConfig& c) {
                               std::vector<std::string> names;
                               for (const LayerConfig& layer : c.config.model.layers) {
                                 names.push_back(layer.name);
                               }
                               return names;
                             })
      .def_property_readonly("is_hf_import", [](const PyConfig& c) { return c.hf.has_value(); });
  module.def("_load_config_path", &load_path, py::arg("path"),
             "Loads an attnrt config file, a Hugging Face config.json or a model folder.");
  module.def("_load_config_text", &load_text, py::arg("text"),
             "Loads a config from JSON text (attnrt or Hugging Face).");
}

}  // namespace attnrt::python
