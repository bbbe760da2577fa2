// attnrt.PagedAttentionWrapper, FlashInfer's plan/run split over a bound KVCache: plan() takes a
// step's batch once (copying the arrays, deriving each KV cache group's slot mapping from its
// block table) and builds every attention group's metadata; run() and write_kv() then call the
// layer's own backend on its bound view, with the GIL released.

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "attention_calls.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attn_metadata.h"
#include "bindings.h"
#include "bound_cache.h"
#include "tensor_import.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

std::vector<std::int32_t> copy_ints(std::span<const std::int32_t> values) {
  return {values.begin(), values.end()};
}

// One KV cache group's block table for the step, copied: [num_reqs, width] kernel-block ids.
struct GroupTable {
  std::vector<std::int32_t> rows;
  int width = 0;
};

class PagedAttentionWrapper {
 public:
  explicit PagedAttentionWrapper(std::shared_ptr<BoundKVCache> cache)
      : cache_(std::move(cache)), by_layer_(cache_->plan().backends.attn_groups) {}

  int num_kv_cache_groups() const {
    return static_cast<int>(cache_->plan().kv.kv_cache_config.kv_cache_groups.size());
  }

  void plan(py::handle query_start_loc, py::handle seq_lens, py::handle block_tables, bool causal) {
    const Tensor starts = import_tensor(query_start_loc, "query_start_loc");
    const Tensor lens = import_tensor(seq_lens, "seq_lens");
    std::vector<std::int32_t> new_starts =
        copy_ints(int_array<std::int32_t>(starts, "query_start_loc"));
    std::vector<std::int32_t> new_lens = copy_ints(int_array<std::int32_t>(lens, "seq_lens"));
    if (new_starts.empty() || new_starts.front() != 0) {
      throw Error("query_start_loc: needs num_reqs + 1 entries starting at 0");
    }
    const int num_reqs = static_cast<int>(new_starts.size()) - 1;
    if (static_cast<int>(new_lens.size()) < num_reqs) {
      throw Error(fmt::format("seq_lens: {} entries for {} requests", new_lens.size(), num_reqs));
    }
    for (int r = 0; r < num_reqs; ++r) {
      const int query_len = new_starts[r + 1] - new_starts[r];
      if (query_len < 0 || query_len > new_lens[r]) {
        throw Error(
            fmt::format("request {}: {} query tokens but seq_lens {}; query_start_loc "
                        "must not decrease and seq_lens count this step's tokens",
                        r, query_len, new_lens[r]));
      }
    }
    std::vector<GroupTable> tables = read_tables(block_tables, num_reqs);
    std::vector<std::vector<std::int64_t>> slots(tables.size());
    for (int g = 0; g < num_kv_cache_groups(); ++g) {
      slots[g] = slot_mapping_of(g, tables[g], new_starts, new_lens);
    }
    // Everything checked: only now does the wrapper's state change.
    query_start_loc_ = std::move(new_starts);
    seq_lens_ = std::move(new_lens);
    tables_ = std::move(tables);
    slots_ = std::move(slots);
    build(num_reqs, causal);
  }

  void write_kv(const std::string& name, py::handle key, py::handle value) {
    const AttentionLayer& layer = executable_layer(name);
    if (layer.shares_kv()) {
      throw Error(fmt::format("write_kv: layer {} shares the KV cache of {} and writes nothing",
                              name, layer.kv_sharing_target()));
    }
    KernelCall call = call_for(layer);
    const Tensor key_tensor = import_tensor(key, "key");
    const bool mla = call.shape.type == AttentionType::mla;
    const Tensor value_tensor = mla ? Tensor() : import_tensor(value, "value");
    call.key = activation_rows(key_tensor, "key", call.key_scratch, /*load=*/true);
    if (!mla) call.value = activation_rows(value_tensor, "value", call.value_scratch, true);
    call.slot_mapping = slots_[group_of(layer)];
    const py::gil_scoped_release unlocked;
    run_write_kv(call);
  }

  void run(const std::string& name, py::handle query, py::handle out) const {
    const AttentionLayer& layer = executable_layer(name);
    KernelCall call = call_for(layer);
    const Tensor query_tensor = import_tensor(query, "query");
    const Tensor out_tensor = import_tensor(out, "out");
    call.query = activation_rows(query_tensor, "query", call.query_scratch, /*load=*/true);
    call.output = activation_rows(out_tensor, "out", call.output_scratch, /*load=*/false);
    const AttentionMetadata& metadata = by_layer_.at(name);
    {
      const py::gil_scoped_release unlocked;
      call.backend->forward({call.shape, call.query, call.output, call.cache, metadata});
      store_rows(call.output, out_tensor);
    }
  }

  py::dict layer_shape(const std::string& name) const {
    const AttentionShape shape = cache_->layer(name).attention_shape();
    py::dict result;
    result["type"] = std::string(attention_type_name(shape.type));
    result["num_heads"] = shape.num_heads;
    result["num_kv_heads"] = shape.num_kv_heads;
    result["head_size"] = shape.head_size;
    result["head_size_v"] = shape.head_size_v;
    return result;
  }

  std::vector<std::int64_t> slot_mapping(int group) const {
    if (!planned_) throw Error("slot_mapping: call plan() first");
    if (group < 0 || group >= num_kv_cache_groups()) {
      throw Error(fmt::format("slot_mapping: no KV cache group {} (the plan has {})", group,
                              num_kv_cache_groups()));
    }
    return slots_[group];
  }

 private:
  // One table per KV cache group: a single int32 [num_reqs, max blocks] table serves a plan with
  // one group; otherwise a list of them, in group order.
  std::vector<GroupTable> read_tables(py::handle block_tables, int num_reqs) const {
    std::vector<py::handle> given;
    if (py::isinstance<py::list>(block_tables) || py::isinstance<py::tuple>(block_tables)) {
      for (py::handle item : block_tables) given.push_back(item);
    } else {
      given.push_back(block_tables);
    }
    if (static_cast<int>(given.size()) != num_kv_cache_groups()) {
      throw Error(
          fmt::format("block_tables: {} tables for a plan of {} KV cache groups; pass "
                      "one per group, in group order",
                      given.size(), num_kv_cache_groups()));
    }
    std::vector<GroupTable> tables;
    for (std::size_t g = 0; g < given.size(); ++g) {
      const std::string what = fmt::format("block_tables[{}]", g);
      const Tensor table = import_tensor(given[g], what);
      const BlockTableView view = block_table_view(table, num_reqs);
      GroupTable& copy = tables.emplace_back();
      copy.width = view.num_cols;
      for (int r = 0; r < num_reqs; ++r) {
        const auto row = view.row(r);
        copy.rows.insert(copy.rows.end(), row.begin(), row.end());
      }
    }
    return tables;
  }

  // Kernel slots of every query token: position p of request r lands in kernel block
  // table[r][p / kernel block size]. State groups hold no token slots (PAD_SLOT_ID).
  std::vector<std::int64_t> slot_mapping_of(int group, const GroupTable& table,
                                            const std::vector<std::int32_t>& starts,
                                            const std::vector<std::int32_t>& lens) const {
    const int num_reqs = static_cast<int>(starts.size()) - 1;
    std::vector<std::int64_t> slots(static_cast<std::size_t>(starts.back()), PAD_SLOT_ID);
    const KVCacheGroupSpec& spec = cache_->plan().kv.kv_cache_config.kv_cache_groups[group];
    if (spec.kv_cache_spec.is_state() || spec.layer_names.empty()) return slots;
    const int block = cache_->plan().backends.kernel_block_sizes[group];
    const std::int64_t num_blocks = cache_->view(spec.layer_names.front()).size(0);
    const int width = table.width;
    for (int r = 0; r < num_reqs; ++r) {
      const int query_len = starts[r + 1] - starts[r];
      for (int i = 0; i < query_len; ++i) {
        const int position = lens[r] - query_len + i;
        const int column = position / block;
        if (column >= width) {
          throw Error(
              fmt::format("block_tables[{}]: request {} has {} tokens but its row holds {} "
                          "blocks of {}",
                          group, r, lens[r], width, block));
        }
        const std::int32_t id = table.rows[static_cast<std::size_t>(r) * width + column];
        if (id < 0 || id >= num_blocks) {
          throw Error(
              fmt::format("block_tables[{}]: request {} column {} is block {}, outside "
                          "the cache's {} blocks",
                          group, r, column, id, num_blocks));
        }
        slots[starts[r] + i] = static_cast<std::int64_t>(id) * block + position % block;
      }
    }
    return slots;
  }

  void build(int num_reqs, bool causal) {
    table_views_.clear();
    slot_views_.clear();
    for (std::size_t g = 0; g < tables_.size(); ++g) {
      table_views_.push_back(
          {tables_[g].rows.data(), num_reqs, tables_[g].width, tables_[g].width});
      slot_views_.emplace_back(slots_[g]);
    }
    AttentionMetadataInputs inputs;
    inputs.device = Device::cpu();
    inputs.num_reqs = num_reqs;
    inputs.num_tokens = query_start_loc_.back();
    inputs.query_start_loc = inputs.query_start_loc_cpu = query_start_loc_;
    inputs.seq_lens = inputs.seq_lens_cpu = seq_lens_;
    for (int r = 0; r < num_reqs; ++r) {
      inputs.max_query_len =
          std::max(inputs.max_query_len, query_start_loc_[r + 1] - query_start_loc_[r]);
      inputs.max_seq_len = std::max(inputs.max_seq_len, seq_lens_[r]);
    }
    inputs.block_tables = table_views_;
    inputs.slot_mappings = slot_views_;
    inputs.causal = causal;
    planned_ = false;
    build_attn_metadata(cache_->plan().backends.attn_groups, inputs, by_layer_);
    planned_ = true;
  }

  const AttentionLayer& executable_layer(const std::string& name) const {
    if (!planned_) throw Error("PagedAttentionWrapper: call plan() before run() or write_kv()");
    const AttentionLayer& layer = cache_->layer(name);
    if (layer.is_state_layer() || !layer.get_attn_backend()->executable()) {
      throw Error(fmt::format("layer {}: its backend {} has no kernel here", name,
                              layer.has_attn_backend() ? layer.get_attn_backend()->name() : "-"));
    }
    return layer;
  }

  int group_of(const AttentionLayer& layer) const {
    const auto& groups = cache_->plan().kv.kv_cache_config.kv_cache_groups;
    const std::string& owner = layer.shares_kv() ? layer.kv_sharing_target() : layer.name();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& names = groups[g].layer_names;
      if (std::find(names.begin(), names.end(), owner) != names.end()) return static_cast<int>(g);
    }
    throw Error(fmt::format("layer {} is in no KV cache group", layer.name()));
  }

  static KernelCall call_for(const AttentionLayer& layer) {
    KernelCall call;
    call.backend = layer.get_attn_backend();
    call.cache = layer.kv_cache();
    call.shape = layer.attention_shape();
    return call;
  }

  std::shared_ptr<BoundKVCache> cache_;
  std::vector<std::int32_t> query_start_loc_, seq_lens_;
  std::vector<GroupTable> tables_;
  std::vector<std::vector<std::int64_t>> slots_;
  std::vector<BlockTableView> table_views_;
  std::vector<std::span<const std::int64_t>> slot_views_;
  AttentionMetadataByLayer by_layer_;
  bool planned_ = false;
};

}  // namespace

void bind_wrapper(py::module_& module) {
  py::class_<PagedAttentionWrapper>(module, "_PagedAttentionWrapper")
      .def(py::init<std::shared_ptr<BoundKVCache>>(), py::arg("cache"))
      .def_property_readonly("num_kv_cache_groups", &PagedAttentionWrapper::num_kv_cache_groups)
      .def("plan", &PagedAttentionWrapper::plan, py::arg("query_start_loc"), py::arg("seq_lens"),
           py::arg("block_tables"), py::arg("causal") = true)
      .def("write_kv", &PagedAttentionWrapper::write_kv, py::arg("layer"), py::arg("key"),
           py::arg("value"))
      .def("run", &PagedAttentionWrapper::run, py::arg("layer"), py::arg("query"), py::arg("out"))
      .def("layer_shape", &PagedAttentionWrapper::layer_shape, py::arg("layer"))
      .def("slot_mapping", &PagedAttentionWrapper::slot_mapping, py::arg("group"));
}

}  // namespace attnrt::python
