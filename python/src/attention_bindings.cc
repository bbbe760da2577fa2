// attnrt.write_kv and attnrt.paged_attention: the CPU backends' kernels on caller tensors. Every
// argument is imported through DLPack (no copy), checked, and the kernel runs with the GIL
// released; the backend's own checks name the token or request at fault.

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>

#include "attention_calls.h"
#include "attnrt/backends/builtin_backends.h"
#include "attnrt/core/error.h"
#include "bindings.h"
#include "tensor_import.h"

namespace py = pybind11;

namespace attnrt::python {
namespace {

AttentionType parse_kernel_type(const std::string& name) {
  for (std::size_t i = 0; i < kAttentionTypeNames.size(); ++i) {
    if (kAttentionTypeNames[i] != name) continue;
    const AttentionType type = kAllAttentionTypes[i];
    if (type == AttentionType::encoder_only || is_state_layer_type(type)) break;
    return type;
  }
  throw Error(fmt::format(
      "attention_type: '{}' is not one the paged kernels run; use full, sliding_window, "
      "chunked_local, mla or cross",
      name));
}

// The layer's [blocks, KV heads, block size, content] view of a cache tensor laid out `layout`:
// "HND" is that order (the views KVCache binds), "NHD" swaps heads and tokens (vLLM's
// [blocks, block size, KV heads, content]).
Tensor cache_view(py::handle kv_cache, const std::string& layout) {
  Tensor cache = import_tensor(kv_cache, "kv_cache");
  if (cache.dim() != 4) {
    throw Error(fmt::format("kv_cache: expected a 4-D paged cache, got {}", cache.describe()));
  }
  if (layout == "HND") return cache;
  if (layout == "NHD") return cache.permute({0, 2, 1, 3});
  throw Error(
      fmt::format("layout: '{}' is not HND ([blocks, heads, block size, content]) or NHD "
                  "([blocks, block size, heads, content])",
                  layout));
}

int max_of(std::span<const std::int32_t> values) {
  int best = 0;
  for (const std::int32_t v : values) best = std::max(best, v);
  return best;
}

void write_kv(py::handle kv_cache, py::handle key, py::handle value, py::handle slot_mapping,
              const std::string& layout, const std::string& backend) {
  KernelCall call;
  call.backend = builtin_backends().get(backend);
  call.cache = cache_view(kv_cache, layout);
  const Tensor key_tensor = import_tensor(key, "key");
  call.shape.type = value.is_none() ? AttentionType::mla : AttentionType::full;
  const Tensor value_tensor = value.is_none() ? Tensor() : import_tensor(value, "value");
  const Tensor slots = import_tensor(slot_mapping, "slot_mapping");
  call.slot_mapping = int_array<std::int64_t>(slots, "slot_mapping");
  call.key = activation_rows(key_tensor, "key", call.key_scratch, /*load=*/true);
  if (value_tensor.defined()) {
    call.value = activation_rows(value_tensor, "value", call.value_scratch, /*load=*/true);
  }
  if (!value_tensor.defined() && call.key.num_heads != 1) {
    throw Error(
        fmt::format("value: None means an MLA latent in `key`, which has 1 KV head, but "
                    "key has {}; pass the value rows",
                    call.key.num_heads));
  }
  call.shape.num_kv_heads = call.key.num_heads;
  call.shape.num_heads = call.key.num_heads;
  call.shape.head_size = call.key.head_size;
  call.shape.head_size_v = value_tensor.defined() ? call.value.head_size : 0;
  if (value_tensor.defined() && call.value.num_tokens != call.key.num_tokens) {
    throw Error(fmt::format("value: {} tokens, but key has {}", call.value.num_tokens,
                            call.key.num_tokens));
  }
  const py::gil_scoped_release unlocked;
  run_write_kv(call);
}

struct ForwardOptions {
  int num_kv_heads = 0;
  int head_size = 0;
  std::optional<int> head_size_v;
  std::optional<double> scale;
  std::optional<int> sliding_window;
  std::optional<int> attention_chunk_size;
  std::optional<std::string> attention_type;
  bool causal = true;
};

AttentionShape shape_of(const ForwardOptions& options, int num_heads) {
  AttentionShape shape;
  shape.type = options.attention_type         ? parse_kernel_type(*options.attention_type)
               : options.sliding_window       ? AttentionType::sliding_window
               : options.attention_chunk_size ? AttentionType::chunked_local
                                              : AttentionType::full;
  shape.num_heads = num_heads;
  shape.num_kv_heads = options.num_kv_heads;
  shape.head_size = options.head_size;
  shape.head_size_v = options.head_size_v.value_or(options.head_size);
  shape.sliding_window = options.sliding_window.value_or(0);
  shape.attention_chunk_size = options.attention_chunk_size.value_or(0);
  shape.scale = static_cast<float>(options.scale.value_or(0.0));
  if (options.scale && !(*options.scale > 0.0)) {
    throw Error(fmt::format("scale: {} is not a positive softmax scale", *options.scale));
  }
  return shape;
}

void paged_attention(py::handle query, py::handle kv_cache, py::handle block_table,
                     py::handle seq_lens, py::handle query_start_loc, py::handle out,
                     const ForwardOptions& options, const std::string& layout,
                     const std::string& backend) {
  KernelCall call;
  call.backend = builtin_backends().get(backend);
  call.cache = cache_view(kv_cache, layout);
  const Tensor query_tensor = import_tensor(query, "query");
  const Tensor out_tensor = import_tensor(out, "out");
  const Tensor table = import_tensor(block_table, "block_table");
  const Tensor lens = import_tensor(seq_lens, "seq_lens");
  const Tensor starts = import_tensor(query_start_loc, "query_start_loc");
  call.query = activation_rows(query_tensor, "query", call.query_scratch, /*load=*/true);
  call.output = activation_rows(out_tensor, "out", call.output_scratch, /*load=*/false);
  call.shape = shape_of(options, call.query.num_heads);

  CommonAttentionMetadata& common = call.common;
  common.query_start_loc = int_array<std::int32_t>(starts, "query_start_loc");
  common.seq_lens = int_array<std::int32_t>(lens, "seq_lens");
  if (common.query_start_loc.empty()) {
    throw Error("query_start_loc: needs num_reqs + 1 entries, got none");
  }
  common.num_reqs = static_cast<int>(common.query_start_loc.size()) - 1;
  common.block_table = block_table_view(table, common.num_reqs);
  common.query_start_loc_cpu = common.query_start_loc;
  common.seq_lens_cpu = common.seq_lens;
  common.num_actual_tokens = call.query.num_tokens;
  common.max_seq_len = max_of(common.seq_lens);
  common.causal = options.causal;
  for (int r = 0; r < common.num_reqs && r < static_cast<int>(common.seq_lens.size()); ++r) {
    common.max_query_len = std::max(common.max_query_len, common.query_len(r));
  }
  const py::gil_scoped_release unlocked;
  run_forward(call);
  store_rows(call.output, out_tensor);
}

}  // namespace

void bind_attention(py::module_& module) {
  module.def("_write_kv", &write_kv, py::arg("kv_cache"), py::arg("key"), py::arg("value"),
             py::arg("slot_mapping"), py::arg("layout"), py::arg("backend"));
  module.def(
      "_paged_attention",
      [](py::handle query, py::handle kv_cache, py::handle block_table, py::handle seq_lens,
         py::handle query_start_loc, py::handle out, int num_kv_heads, int head_size,
         std::optional<int> head_size_v, std::optional<double> scale,
         std::optional<int> sliding_window, std::optional<int> attention_chunk_size,
         std::optional<std::string> attention_type, bool causal, const std::string& layout,
         const std::string& backend) {
        const ForwardOptions options{num_kv_heads,
                                     head_size,
                                     head_size_v,
                                     scale,
                                     sliding_window,
                                     attention_chunk_size,
                                     std::move(attention_type),
                                     causal};
        paged_attention(query, kv_cache, block_table, seq_lens, query_start_loc, out, options,
                        layout, backend);
      },
      py::arg("query"), py::arg("kv_cache"), py::arg("block_table"), py::arg("seq_lens"),
      py::arg("query_start_loc"), py::arg("out"), py::arg("num_kv_heads"), py::arg("head_size"),
      py::arg("head_size_v"), py::arg("scale"), py::arg("sliding_window"),
      py::arg("attention_chunk_size"), py::arg("attention_type"), py::arg("causal"),
      py::arg("layout"), py::arg("backend"));
}

}  // namespace attnrt::python
