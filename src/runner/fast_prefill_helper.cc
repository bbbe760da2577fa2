// FastPrefillHelper::prepare (SEMANTICS §6.4, V-newest: the reduced batch dispatches with the
// step's LoRA count).

#include "attnrt/runner/fast_prefill_helper.h"

#include <algorithm>

#include "core/fail.h"

namespace attnrt {
namespace {

void check_max_num_tokens(int max_num_tokens) {
  if (max_num_tokens <= 0) {
    fail("FastPrefillHelper: max_num_tokens must be positive, got {}", max_num_tokens);
  }
}

int max_logits_per_request(std::span<const std::int32_t> cu_num_logits, int num_reqs) {
  int most = 0;
  for (int r = 0; r < num_reqs; ++r) most = std::max(most, cu_num_logits[r + 1] - cu_num_logits[r]);
  return most;
}

}  // namespace

FastPrefillHelper::FastPrefillHelper(int max_num_tokens, const GraphDispatcher& dispatcher)
    : dispatcher_(&dispatcher) {
  check_max_num_tokens(max_num_tokens);
  logits_indices_.assign(static_cast<std::size_t>(max_num_tokens), 0);
}

FastPrefillHelper::FastPrefillHelper(int max_num_tokens, const CudaGraphManager& manager)
    : owned_dispatcher_(std::make_unique<CudaGraphManagerDispatcher>(manager)),
      dispatcher_(owned_dispatcher_.get()) {
  check_max_num_tokens(max_num_tokens);
  logits_indices_.assign(static_cast<std::size_t>(max_num_tokens), 0);
}

std::optional<FastPrefillBatchMetadata> FastPrefillHelper::prepare(
    std::span<const std::int32_t> logits_indices, int num_reqs,
    std::span<const std::int32_t> cu_num_logits_cpu, bool has_prefill,
    const BatchExecutionDescriptor& batch_desc, int num_active_loras) {
  // A FULL graph has fixed shapes the reduced batch cannot change; micro-batches split the step.
  if (!has_prefill || batch_desc.cg_mode == CUDAGraphMode::FULL || batch_desc.num_ubatches > 1) {
    return std::nullopt;
  }
  const int n = static_cast<int>(logits_indices.size());
  if (n <= 0 || n > max_num_tokens()) {
    fail(
        "FastPrefillHelper: {} logits indices for a buffer of {}; a prefill step samples at "
        "least one row and at most max_num_tokens",
        n, max_num_tokens());
  }
  if (num_reqs < 0 || cu_num_logits_cpu.size() < static_cast<std::size_t>(num_reqs) + 1) {
    fail("FastPrefillHelper: cu_num_logits has {} entries for {} requests; it needs num_reqs + 1",
         cu_num_logits_cpu.size(), num_reqs);
  }
  std::copy(logits_indices.begin(), logits_indices.end(), logits_indices_.begin());
  // Stale indices past the batch must never reach a gather: repeat the last one.
  std::fill(logits_indices_.begin() + n, logits_indices_.end(), logits_indices.back());
  const BatchExecutionDescriptor reduced =
      dispatcher_->dispatch(num_reqs, n, std::nullopt, num_active_loras);
  if (reduced.num_tokens < n) {
    fail("FastPrefillHelper: the graph manager padded {} logits rows to {}; {} is smaller", n,
         reduced.num_tokens, reduced.describe());
  }
  const int padded = std::min(reduced.num_tokens, max_num_tokens());
  return FastPrefillBatchMetadata{
      std::span<const std::int32_t>(logits_indices_.data(), static_cast<std::size_t>(padded)), n,
      max_logits_per_request(cu_num_logits_cpu, num_reqs)};
}

}  // namespace attnrt
