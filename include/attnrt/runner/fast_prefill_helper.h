#pragma once
// FastPrefillHelper (SEMANTICS §6.4): on a step with a prefill, stages the logits rows into a
// persistent index buffer padded to the size a captured graph of the reduced batch runs at, so
// that the KV-sharing layers run on those rows only (§6.2, §6.5). Created when
// cache.kv_sharing_fast_prefill is on.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "attnrt/core/export.h"
#include "attnrt/runner/batch_descriptor.h"
#include "attnrt/runner/cudagraph_manager.h"

namespace attnrt {

// What the helper asks of the graph manager: the descriptor a batch would run under. An
// interface so that tests can answer with a fake manager.
class ATTNRT_API GraphDispatcher {
 public:
  virtual ~GraphDispatcher() = default;
  virtual BatchExecutionDescriptor dispatch(int num_reqs, int num_tokens,
                                            std::optional<int> uniform_token_count,
                                            int num_active_loras) const = 0;
};

// CudaGraphManager::dispatch as a GraphDispatcher. `manager` must outlive the adapter.
class ATTNRT_API CudaGraphManagerDispatcher final : public GraphDispatcher {
 public:
  explicit CudaGraphManagerDispatcher(const CudaGraphManager& manager) : manager_(&manager) {}
  BatchExecutionDescriptor dispatch(int num_reqs, int num_tokens,
                                    std::optional<int> uniform_token_count,
                                    int num_active_loras) const override {
    return manager_->dispatch(num_reqs, num_tokens, uniform_token_count, num_active_loras);
  }

 private:
  const CudaGraphManager* manager_;
};

// The logits rows of a fast-prefill step, as build_attn_metadata hands them to every KV cache
// group (SEMANTICS §6.2): indices padded to a captured size with the last index repeated.
struct FastPrefillBatchMetadata {
  std::span<const std::int32_t> logits_indices_padded;
  int num_logits_indices = 0;  // the real ones, a prefix of logits_indices_padded
  int max_logits_per_req = 0;  // the reduced batch's max_query_len
};

class ATTNRT_API FastPrefillHelper {
 public:
  // `dispatcher` must outlive the helper. Throws Error if max_num_tokens is not positive.
  FastPrefillHelper(int max_num_tokens, const GraphDispatcher& dispatcher);
  // Dispatches through `manager`, which must outlive the helper.
  FastPrefillHelper(int max_num_tokens, const CudaGraphManager& manager);

  // None for a step without prefill, under a FULL graph (fixed shapes), or in micro-batches.
  // Otherwise the step's `logits_indices` (request order, cu_num_logits_cpu[num_reqs] of them)
  // padded to min(dispatched size of the reduced batch, max_num_tokens). The span points into
  // the helper's buffer and stays valid until the next prepare. Throws Error for an empty or
  // oversized index list or a cu_num_logits_cpu shorter than num_reqs + 1.
  std::optional<FastPrefillBatchMetadata> prepare(std::span<const std::int32_t> logits_indices,
                                                  int num_reqs,
                                                  std::span<const std::int32_t> cu_num_logits_cpu,
                                                  bool has_prefill,
                                                  const BatchExecutionDescriptor& batch_desc,
                                                  int num_active_loras = 0);

  int max_num_tokens() const { return static_cast<int>(logits_indices_.size()); }

 private:
  std::unique_ptr<GraphDispatcher> owned_dispatcher_;  // the manager adapter, if any
  const GraphDispatcher* dispatcher_;
  std::vector<std::int32_t> logits_indices_;  // [max_num_tokens], persistent
};

}  // namespace attnrt
