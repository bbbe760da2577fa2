// The per-step helpers of the reference page from Python: BlockTables over a bound KVCache (block
// tables and slot mappings handed out zero-copy), CudaGraphManager.dispatch and
// FastPrefillHelper.prepare, with BatchExecutionDescriptor as their common answer.

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/block_tables.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "attnrt/runner/fast_prefill_helper.h"
#include "bindings.h"
#include "bound_cache.h"
#include "loaded_model.h"
#include "tensor_export.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

// BlockTables sized from the cache's config and plan; views of its buffers keep it alive.
struct PyBlockTables : std::enable_shared_from_this<PyBlockTables> {
  explicit PyBlockTables(std::shared_ptr<BoundKVCache> bound)
      : cache(std::move(bound)),
        tables(BlockTables::from_config(cache->config(), cache->plan().kv.kv_cache_config,
                                        cache->plan().backends.attn_groups)) {}

  void check_group(int group) const {
    if (group < 0 || group >= tables.num_groups()) {
      throw Error(fmt::format("BlockTables: no KV cache group {} (there are {})", group,
                              tables.num_groups()));
    }
  }

  std::shared_ptr<BoundKVCache> cache;
  BlockTables tables;
};

void append_block_ids(PyBlockTables& self, int req_index,
                      const std::vector<std::vector<std::int32_t>>& block_ids, bool overwrite) {
  std::vector<std::span<const std::int32_t>> spans(block_ids.begin(), block_ids.end());
  self.tables.append_block_ids(req_index, spans, overwrite);
}

TensorView batch_block_table(PyBlockTables& self, int group) {
  self.check_group(group);
  const BlockTableView view = self.tables.block_table(group);
  const std::size_t count =
      view.num_rows == 0
          ? 0
          : static_cast<std::size_t>(view.num_rows - 1) * view.row_stride + view.num_cols;
  return {borrowed_tensor<std::int32_t>({view.data, count}, {view.num_rows, view.num_cols},
                                        {view.row_stride, 1}, self.shared_from_this())};
}

TensorView slot_mapping(PyBlockTables& self, int group) {
  self.check_group(group);
  const std::span<const std::int64_t> slots = self.tables.slot_mapping(group);
  return {borrowed_tensor<std::int64_t>(slots, {static_cast<std::int64_t>(slots.size())}, {1},
                                        self.shared_from_this())};
}

// A graph manager for a config: the mode the plan resolves unless one is given.
struct PyGraphManager {
  PyGraphManager(const PyConfigPtr& loaded, const std::optional<std::string>& mode)
      : manager(loaded->config,
                mode ? CUDAGraphMode::parse(*mode)
                     : plan_attention(loaded->config, backend_registry_for(loaded->config))
                           .cudagraph.mode) {}
  CudaGraphManager manager;
};

struct PyFastPrefillHelper {
  PyFastPrefillHelper(int max_num_tokens, std::shared_ptr<PyGraphManager> graphs)
      : manager(std::move(graphs)), helper(max_num_tokens, manager->manager) {}
  std::shared_ptr<PyGraphManager> manager;  // the helper dispatches through it
  FastPrefillHelper helper;
};

py::object prepare(PyFastPrefillHelper& self, const std::vector<std::int32_t>& logits_indices,
                   int num_reqs, const std::vector<std::int32_t>& cu_num_logits_cpu,
                   bool has_prefill, const BatchExecutionDescriptor& batch_desc,
                   int num_active_loras) {
  const auto result = self.helper.prepare(logits_indices, num_reqs, cu_num_logits_cpu, has_prefill,
                                          batch_desc, num_active_loras);
  if (!result) return py::none();
  py::dict out;
  out["logits_indices_padded"] = std::vector<std::int32_t>(result->logits_indices_padded.begin(),
                                                           result->logits_indices_padded.end());
  out["num_logits_indices"] = result->num_logits_indices;
  out["max_logits_per_req"] = result->max_logits_per_req;
  return out;
}

void bind_descriptor(py::module_& module) {
  py::class_<BatchExecutionDescriptor>(module, "BatchExecutionDescriptor",
                                       "How a batch runs: graph mode and padded sizes.")
      .def(py::init([](const std::string& cg_mode, int num_tokens, std::optional<int> num_reqs,
                       std::optional<int> uniform_token_count, std::optional<int> max_query_len,
                       int num_active_loras, bool exact_num_tokens, int num_ubatches) {
             return BatchExecutionDescriptor{CUDAGraphMode::parse(cg_mode),
                                             num_tokens,
                                             num_reqs,
                                             uniform_token_count,
                                             max_query_len,
                                             num_active_loras,
                                             exact_num_tokens,
                                             num_ubatches};
           }),
           py::arg("cg_mode") = "NONE", py::arg("num_tokens") = 0, py::arg("num_reqs") = py::none(),
           py::arg("uniform_token_count") = py::none(), py::arg("max_query_len") = py::none(),
           py::arg("num_active_loras") = 0, py::arg("exact_num_tokens") = false,
           py::arg("num_ubatches") = 1)
      .def_property_readonly(
          "cg_mode",
          [](const BatchExecutionDescriptor& d) { return std::string(d.cg_mode.name()); })
      .def_readonly("num_tokens", &BatchExecutionDescriptor::num_tokens)
      .def_readonly("num_reqs", &BatchExecutionDescriptor::num_reqs)
      .def_readonly("uniform_token_count", &BatchExecutionDescriptor::uniform_token_count)
      .def_readonly("max_query_len", &BatchExecutionDescriptor::max_query_len)
      .def_readonly("num_active_loras", &BatchExecutionDescriptor::num_active_loras)
      .def_readonly("exact_num_tokens", &BatchExecutionDescriptor::exact_num_tokens)
      .def_readonly("num_ubatches", &BatchExecutionDescriptor::num_ubatches)
      .def("__eq__", [](const BatchExecutionDescriptor& a,
                        const BatchExecutionDescriptor& b) { return a == b; })
      .def("__repr__", &BatchExecutionDescriptor::describe);
}

}  // namespace

void bind_step_inputs(py::module_& module) {
  bind_descriptor(module);
  py::class_<PyBlockTables, std::shared_ptr<PyBlockTables>>(module, "_BlockTables")
      .def(py::init<std::shared_ptr<BoundKVCache>>(), py::arg("cache"))
      .def_property_readonly("num_groups",
                             [](const PyBlockTables& self) { return self.tables.num_groups(); })
      .def_property_readonly("max_num_reqs",
                             [](const PyBlockTables& self) { return self.tables.max_num_reqs(); })
      .def_property_readonly("max_num_tokens",
                             [](const PyBlockTables& self) { return self.tables.max_num_tokens(); })
      .def("append_block_ids", &append_block_ids, py::arg("req_index"), py::arg("block_ids"),
           py::arg("overwrite") = false)
      .def(
          "remove_request",
          [](PyBlockTables& self, int req_index) { self.tables.remove_request(req_index); },
          py::arg("req_index"))
      .def(
          "num_blocks",
          [](const PyBlockTables& self, int group, int req_index) {
            self.check_group(group);
            return self.tables.num_blocks(group, req_index);
          },
          py::arg("group"), py::arg("req_index"))
      .def(
          "gather_block_tables",
          [](PyBlockTables& self, const std::vector<std::int32_t>& idx_mapping,
             int num_reqs_padded) {
            self.tables.gather_block_tables(idx_mapping, num_reqs_padded);
          },
          py::arg("idx_mapping"), py::arg("num_reqs_padded"))
      .def(
          "compute_slot_mappings",
          [](PyBlockTables& self, const std::vector<std::int32_t>& idx_mapping,
             const std::vector<std::int32_t>& query_start_loc,
             const std::vector<std::int64_t>& positions, int num_tokens_padded) {
            self.tables.compute_slot_mappings(idx_mapping, query_start_loc, positions,
                                              num_tokens_padded);
            self.tables.translate_slot_mappings(self.cache->plan().backends.attn_groups);
          },
          py::arg("idx_mapping"), py::arg("query_start_loc"), py::arg("positions"),
          py::arg("num_tokens_padded"))
      .def("block_table", &batch_block_table, py::arg("group"))
      .def("slot_mapping", &slot_mapping, py::arg("group"));

  py::class_<PyGraphManager, std::shared_ptr<PyGraphManager>>(module, "_CudaGraphManager")
      .def(py::init<const PyConfigPtr&, const std::optional<std::string>&>(), py::arg("config"),
           py::arg("mode") = py::none())
      .def_property_readonly(
          "mode",
          [](const PyGraphManager& self) { return std::string(self.manager.mode().name()); })
      .def("capture_descriptors",
           [](const PyGraphManager& self) { return self.manager.capture_descriptors(); })
      .def("mark_captured", [](PyGraphManager& self) { self.manager.mark_captured(); })
      .def_property_readonly("captured",
                             [](const PyGraphManager& self) { return self.manager.captured(); })
      .def(
          "dispatch",
          [](const PyGraphManager& self, int num_reqs, int num_tokens,
             std::optional<int> uniform_token_count, int num_active_loras,
             std::optional<int> max_query_len, int num_ubatches) {
            return self.manager.dispatch(num_reqs, num_tokens, uniform_token_count,
                                         num_active_loras, max_query_len, num_ubatches);
          },
          py::arg("num_reqs"), py::arg("num_tokens"), py::arg("uniform_token_count") = py::none(),
          py::arg("num_active_loras") = 0, py::arg("max_query_len") = py::none(),
          py::arg("num_ubatches") = 1);

  py::class_<PyFastPrefillHelper>(module, "_FastPrefillHelper")
      .def(py::init<int, std::shared_ptr<PyGraphManager>>(), py::arg("max_num_tokens"),
           py::arg("manager"))
      .def_property_readonly(
          "max_num_tokens",
          [](const PyFastPrefillHelper& self) { return self.helper.max_num_tokens(); })
      .def("prepare", &prepare, py::arg("logits_indices"), py::arg("num_reqs"),
           py::arg("cu_num_logits_cpu"), py::arg("has_prefill"), py::arg("batch_desc"),
           py::arg("num_active_loras") = 0);
}

}  // namespace attnrt::python
