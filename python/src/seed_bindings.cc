// The reference page's functions under their names, with keyword arguments: init_attn_backend
// builds the attention groups of a config's KV cache plan; the checks take those groups back.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <set>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/kv_cache_plan.h"
#include "bindings.h"
#include "loaded_model.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

// What init_attn_backend made, kept together: the groups point into the plan's specs.
struct AttnGroups {
  PyConfigPtr config;
  KVCachePlan kv;
  InitAttnBackendResult result;
};
using AttnGroupsPtr = std::shared_ptr<AttnGroups>;

// One attention group of an AttnGroups, by index.
struct AttnGroupRef {
  AttnGroupsPtr owner;
  std::size_t kv_group = 0;
  std::size_t index = 0;
  const AttentionGroup& group() const { return owner->result.attn_groups[kv_group][index]; }
};

std::optional<std::set<std::string>> to_set(const std::optional<std::vector<std::string>>& names) {
  if (!names) return std::nullopt;
  return std::set<std::string>(names->begin(), names->end());
}

const std::set<std::string>* pointer_to(const std::optional<std::set<std::string>>& names) {
  return names ? &*names : nullptr;
}

AttnGroupsPtr init_groups(const PyConfigPtr& config,
                          const std::optional<std::vector<std::string>>& active_layer_names,
                          const std::optional<std::vector<std::string>>& draft_layer_names,
                          bool maps_slot_mapping,
                          const std::vector<std::string>& slot_mapped_layers) {
  auto groups = std::make_shared<AttnGroups>();
  groups->config = config;
  const BackendRegistry registry = backend_registry_for(config->config);
  groups->kv = plan_kv_cache_without_views(config->config, &registry);
  const auto active = to_set(active_layer_names);
  const auto drafts = to_set(draft_layer_names);
  InitAttnBackendOptions options;
  options.active_layer_names = pointer_to(active);
  options.draft_layer_names = pointer_to(drafts);
  options.maps_slot_mapping = maps_slot_mapping;
  options.slot_mapped_layers = {slot_mapped_layers.begin(), slot_mapped_layers.end()};
  groups->result = init_attn_backend(groups->kv.kv_cache_config, config->config,
                                     groups->kv.forward_context, Device::cpu(), options);
  return groups;
}

py::list group_lists(const AttnGroupsPtr& groups) {
  py::list lists;
  for (std::size_t g = 0; g < groups->result.attn_groups.size(); ++g) {
    py::list list;
    for (std::size_t i = 0; i < groups->result.attn_groups[g].size(); ++i) {
      list.append(AttnGroupRef{groups, g, i});
    }
    lists.append(list);
  }
  return lists;
}

}  // namespace

void bind_seed_functions(py::module_& module) {
  py::class_<AttnGroupRef>(module, "AttentionGroup", "One attention group (backend, layers).")
      .def_property_readonly("backend",
                             [](const AttnGroupRef& r) { return r.group().backend->name(); })
      .def_property_readonly("layer_names",
                             [](const AttnGroupRef& r) { return r.group().layer_names; })
      .def_property_readonly("kv_cache_group_id",
                             [](const AttnGroupRef& r) { return r.group().kv_cache_group_id; })
      .def_property_readonly("num_heads_q",
                             [](const AttnGroupRef& r) { return r.group().num_heads_q; });
  py::class_<AttnGroups, AttnGroupsPtr>(module, "AttnBackends",
                                        "What init_attn_backend returns: the attention groups.")
      .def_property_readonly("attn_groups", &group_lists)
      .def_property_readonly("kernel_block_sizes",
                             [](const AttnGroups& g) { return g.result.kernel_block_sizes; })
      .def_property_readonly(
          "min_cg_support",
          [](const AttnGroups& g) {
            return std::string(cg_support_name(g.result.cg_support.min_cg_support));
          })
      .def_property_readonly("min_cg_attn_backend", [](const AttnGroups& g) {
        return g.result.cg_support.min_cg_attn_backend;
      });

  module.def("init_attn_backend", &init_groups, py::arg("vllm_config"),
             py::arg("active_layer_names") = py::none(), py::arg("draft_layer_names") = py::none(),
             py::arg("maps_slot_mapping") = false,
             py::arg("slot_mapped_layers") = std::vector<std::string>{},
             "Plans the KV cache of `vllm_config` and builds its attention groups.");
  module.def(
      "get_attn_cg_support",
      [](const AttnGroupsPtr& groups, const PyConfigPtr& config,
         const std::optional<std::vector<std::string>>& checked) {
        const auto names = to_set(checked);
        const AttentionCGSupportInfo info =
            get_attn_cg_support(groups->result.attn_groups, config->config, pointer_to(names));
        return py::make_tuple(std::string(cg_support_name(info.min_cg_support)),
                              info.min_cg_attn_backend);
      },
      py::arg("attn_groups"), py::arg("vllm_config"), py::arg("checked_layer_names") = py::none(),
      "(weakest CUDA-graph support, the backend that has it or None).");
  module.def(
      "get_query_lens_mismatch_unsupported_backend",
      [](const AttnGroupsPtr& groups, const std::optional<std::vector<std::string>>& checked) {
        const auto names = to_set(checked);
        return get_query_lens_mismatch_unsupported_backend(groups->result.attn_groups,
                                                           pointer_to(names));
      },
      py::arg("attn_groups"), py::arg("checked_layer_names") = py::none());
  module.def(
      "get_varlen_cudagraph_unsupported_backend",
      [](const AttnGroupsPtr& groups, const PyConfigPtr& config, int max_query_len,
         const std::optional<std::vector<std::string>>& checked) -> py::object {
        const auto names = to_set(checked);
        const auto failing = get_varlen_cudagraph_unsupported_backend(
            groups->result.attn_groups, config->config, max_query_len, pointer_to(names));
        if (!failing) return py::none();
        return py::make_tuple(failing->backend, failing->bound);
      },
      py::arg("attn_groups"), py::arg("vllm_config"), py::arg("max_query_len"),
      py::arg("checked_layer_names") = py::none(), "(backend, bound or None), or None.");
  module.def(
      "get_kv_sharing_fast_prefill_eligible_layers",
      [](const PyConfigPtr& config, const std::optional<std::vector<std::string>>& drafts) {
        const auto names = to_set(drafts);
        const ForwardContext context = ForwardContext::from_config(config->config);
        const std::set<std::string> layers =
            get_kv_sharing_fast_prefill_eligible_layers(config->config, context, pointer_to(names));
        return std::vector<std::string>(layers.begin(), layers.end());
      },
      py::arg("vllm_config"), py::arg("draft_layer_names") = py::none());
}

}  // namespace attnrt::python
