// attnrt.plan: the attention plan of a config, as the stable JSON of `attnrt plan --json` (one
// writer, attnrt/runner/plan_json.h); the Python Plan wraps it with attribute access.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/runner/plan_json.h"
#include "bindings.h"
#include "loaded_model.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

// The plan's JSON text for `config`, with cache.memory replaced by `memory` bytes when given.
std::string plan_json_text(const PyConfigPtr& loaded, std::optional<std::uint64_t> memory) {
  py::gil_scoped_release release;
  EngineConfig config = loaded->config;
  if (memory) config.cache.memory = *memory;
  validate_config(config);
  const AttentionPlan plan = plan_attention(config, backend_registry_for(config));
  const PlanJsonExtras extras{loaded->hf ? &*loaded->hf : nullptr, nullptr};
  return attnrt::plan_json_text(config, plan, extras);
}

}  // namespace

void bind_plan(py::module_& module) {
  module.def("_plan_json", &plan_json_text, py::arg("config"), py::arg("memory") = py::none(),
             "The plan of `config` as the JSON text `attnrt plan --json` prints.");
}

}  // namespace attnrt::python
