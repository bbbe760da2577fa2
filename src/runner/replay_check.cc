// check_batch_fits: the conditions of SEMANTICS §2.2, checked where the batch is padded to the
// descriptor rather than where the descriptor is chosen.

#include "attnrt/runner/replay_check.h"

#include "core/fail.h"

namespace attnrt {
namespace {

[[noreturn]] void reject(const BatchExecutionDescriptor& descriptor, const std::string& reason) {
  fail(
      "a batch cannot run under {}: {}; pad it to the descriptor CudaGraphManager::dispatch "
      "returns for this batch, or run it eagerly",
      descriptor.describe(), reason);
}

void check_sizes(const BatchExecutionDescriptor& d, const RuntimeBatch& batch) {
  if (batch.num_tokens > d.num_tokens) {
    reject(d, fmt::format("its {} tokens exceed the {} the descriptor holds", batch.num_tokens,
                          d.num_tokens));
  }
  if (d.exact_num_tokens && batch.num_tokens != d.num_tokens) {
    reject(d, fmt::format("it has {} tokens, but the graph serves exactly {}", batch.num_tokens,
                          d.num_tokens));
  }
  if (d.num_reqs && batch.num_reqs > *d.num_reqs) {
    reject(d, fmt::format("its {} requests exceed the {} the graph was padded for", batch.num_reqs,
                          *d.num_reqs));
  }
}

void check_shape(const BatchExecutionDescriptor& d, const RuntimeBatch& batch) {
  if (d.uniform_token_count && batch.uniform_token_count != d.uniform_token_count) {
    reject(d, batch.uniform_token_count
                  ? fmt::format("every request has {} tokens, but the graph decodes {} per request",
                                *batch.uniform_token_count, *d.uniform_token_count)
                  : fmt::format("its requests are not all decodes of {} tokens",
                                *d.uniform_token_count));
  }
  if (d.max_query_len && (!batch.max_query_len || *batch.max_query_len > *d.max_query_len)) {
    reject(d, batch.max_query_len
                  ? fmt::format("its longest query has {} tokens, above the graph's bound of {}",
                                *batch.max_query_len, *d.max_query_len)
                  : fmt::format("its longest query is unknown, and the graph is bounded to {}",
                                *d.max_query_len));
  }
  // An eager run has no graph whose LoRA kernels could be too small.
  if (d.cg_mode != CUDAGraphMode::NONE && batch.num_active_loras > d.num_active_loras) {
    reject(d, fmt::format("its {} active LoRA adapters exceed the graph's LoRA case of {}",
                          batch.num_active_loras, d.num_active_loras));
  }
  if (batch.num_ubatches != d.num_ubatches) {
    reject(d, fmt::format("it runs as {} micro-batches, the graph as {}", batch.num_ubatches,
                          d.num_ubatches));
  }
}

}  // namespace

void check_batch_fits(const BatchExecutionDescriptor& descriptor, const RuntimeBatch& batch) {
  check_sizes(descriptor, batch);
  check_shape(descriptor, batch);
}

}  // namespace attnrt
