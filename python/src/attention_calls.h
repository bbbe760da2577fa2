#pragma once
// One kernel call from Python, assembled from imported tensors: the backend, the layer's cache
// view and shape, the activation rows and the step's arrays. Shared by the free functions
// (attnrt.write_kv / paged_attention) and PagedAttentionWrapper, which runs them without the GIL.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/common_attention_metadata.h"

namespace attnrt::python {

struct KernelCall {
  AttentionBackendPtr backend;
  Tensor cache;  // [kernel blocks, KV heads, block size, content]
  AttentionShape shape;
  ActivationView query, key, value, output;
  // float32 copies of float16/bfloat16 rows (see activation_rows).
  std::vector<float> query_scratch, key_scratch, value_scratch, output_scratch;
  std::span<const std::int64_t> slot_mapping;
  CommonAttentionMetadata common;
};

// An int32 [rows, max blocks] table with unit column stride and at least `num_reqs` rows.
BlockTableView block_table_view(const Tensor& table, int num_reqs);

void run_write_kv(const KernelCall& call);
// Runs call.backend over call.common, with metadata from a builder this thread keeps per backend
// and head sizes, so that steady calls reuse its workspace and allocate nothing.
void run_forward(const KernelCall& call);

}  // namespace attnrt::python
