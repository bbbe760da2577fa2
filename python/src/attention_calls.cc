#include "attention_calls.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/error.h"

namespace attnrt::python {
namespace {

// A builder for one backend and operand shape, sized for `max_reqs` requests.
struct CachedBuilder {
  const AttentionBackend* backend = nullptr;
  AttentionType type = AttentionType::full;
  int key_size = 0;
  int value_size = 0;
  int max_reqs = 0;
  std::unique_ptr<AttentionMetadataBuilder> builder;
};

constexpr int kMinBuilderRequests = 256;

std::unique_ptr<AttentionMetadataBuilder> make_builder(const KernelCall& call, int max_reqs) {
  KVCacheSpec spec;
  spec.kind = call.shape.type == AttentionType::mla ? KVSpecKind::mla : KVSpecKind::full;
  spec.block_size = static_cast<int>(std::max<std::int64_t>(call.cache.size(2), 1));
  spec.num_kv_heads = call.shape.num_kv_heads;
  spec.head_size = call.shape.head_size;
  spec.head_size_v = spec.kind == KVSpecKind::mla ? 0 : call.shape.head_size_v;
  spec.dtype = call.cache.dtype();
  EngineConfig config;
  config.scheduler.max_num_seqs = max_reqs;
  return call.backend->create_builder(spec, {"paged_attention"}, config, Device::cpu());
}

const AttentionMetadata& metadata_for(const KernelCall& call) {
  thread_local std::vector<CachedBuilder> builders;
  const int num_reqs = call.common.num_reqs;
  auto found = std::find_if(builders.begin(), builders.end(), [&](const CachedBuilder& cached) {
    return cached.backend == call.backend.get() && cached.type == call.shape.type &&
           cached.key_size == call.shape.head_size && cached.value_size == call.shape.head_size_v;
  });
  if (found == builders.end()) {
    found = builders.insert(builders.end(),
                            CachedBuilder{call.backend.get(), call.shape.type, call.shape.head_size,
                                          call.shape.head_size_v, 0, nullptr});
  }
  if (found->max_reqs < num_reqs || found->builder == nullptr) {
    // Grown by doubling, so a workload settles on one builder after a few calls.
    const int max_reqs = std::max({kMinBuilderRequests, num_reqs, 2 * found->max_reqs});
    found->builder = make_builder(call, max_reqs);
    found->max_reqs = max_reqs;
  }
  return found->builder->build(0, call.common);
}

}  // namespace

BlockTableView block_table_view(const Tensor& table, int num_reqs) {
  if (table.dtype() != DType::int32 || table.dim() != 2) {
    throw Error(
        fmt::format("block_table: expected a 2-D int32 [num_reqs, max blocks] table, got {}",
                    table.describe()));
  }
  if (table.size(1) > 1 && table.stride(1) != 1) {
    throw Error(
        fmt::format("block_table: rows must be contiguous (column stride 1), got stride {}; pass "
                    ".contiguous()",
                    table.stride(1)));
  }
  if (table.size(0) < num_reqs) {
    throw Error(fmt::format("block_table: {} rows for {} requests", table.size(0), num_reqs));
  }
  BlockTableView view;
  view.data = table.data_as<const std::int32_t>();
  view.num_rows = static_cast<int>(table.size(0));
  view.num_cols = static_cast<int>(table.size(1));
  view.row_stride = table.stride(0);
  return view;
}

void run_write_kv(const KernelCall& call) {
  call.backend->write_kv({call.shape, call.key, call.value, call.slot_mapping, call.cache});
}

void run_forward(const KernelCall& call) {
  const AttentionMetadata& metadata = metadata_for(call);
  call.backend->forward({call.shape, call.query, call.output, call.cache, metadata});
}

}  // namespace attnrt::python
