#pragma once
// Scheduler: continuous batching with chunked prefill (vLLM v1's Scheduler, simplified). Each
// step serves running requests first, in admission order (one decode token each, or the next
// chunk of their prefill), then admits waiting requests first come, first served, within
// max_num_seqs and the max_num_batched_tokens budget; a prompt longer than the budget left is
// split. Blocks are allocated as requests grow and returned when they finish. When a running
// request cannot get its blocks, the most recently admitted running request is preempted (its
// blocks freed, its tokens, generated ones included, recomputed later) and no request is
// admitted that step. Speculative decoding is not scheduled: num_speculative_tokens must be 0.

#include <cstdint>
#include <memory>
#include <span>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/engine/kv_block_manager.h"
#include "attnrt/engine/request.h"
#include "attnrt/engine/scheduler_output.h"
#include "attnrt/kv/kv_cache_config.h"

namespace attnrt {

class ATTNRT_API Scheduler {
 public:
  // Throws Error on num_speculative_tokens != 0, max_num_seqs or max_num_batched_tokens below 1,
  // max_model_len below 2, or a KV cache config KVBlockManager rejects.
  Scheduler(const EngineConfig& config, const KVCacheConfig& kv_cache_config);
  Scheduler(const Scheduler&) = delete;  // requests and outputs point into its storage
  Scheduler& operator=(const Scheduler&) = delete;
  Scheduler(Scheduler&&) noexcept;
  Scheduler& operator=(Scheduler&&) noexcept;
  ~Scheduler();

  // Queues a request behind the others and returns its id (0, 1, ...). Throws Error on an empty
  // prompt, a prompt that leaves no room to generate (max_model_len tokens or more), max_tokens
  // below 1, or a request that could need more blocks than the whole pool (naming the shortfall).
  RequestId add_request(std::span<const std::int32_t> prompt_token_ids, int max_tokens);

  // Plans one step. The output and its Request pointers stay valid until the next call. Throws
  // Error when the previous step's update_from_output is missing.
  const SchedulerOutput& schedule();
  // Applies the step: sampled[i] is the token sampled for output.scheduled[i]; it is ignored for
  // a prefill chunk that does not reach the request's last token. A request finishes at
  // max_tokens generated tokens or max_model_len tokens; its blocks and slot are returned. The
  // finished requests stay readable until the next schedule().
  std::span<const Request* const> update_from_output(std::span<const std::int32_t> sampled);

  // Cancels a waiting, preempted or running request (vLLM's finish_requests with
  // FINISHED_ABORTED): its blocks go back to the pool at once, its slot is reported in the next
  // schedule()'s `finished` like a finished request's, and it is never scheduled again. Call it
  // between steps. Throws Error, changing nothing, for an unknown, finished or already aborted
  // id, or between schedule() and update_from_output().
  void abort_request(RequestId id);

  bool has_unfinished_requests() const;
  int num_waiting() const;
  int num_running() const;
  std::span<const Request* const> running() const;  // admission order
  std::int64_t num_preemptions() const;             // since construction
  std::int64_t num_aborted() const;                 // since construction
  const BlockPool& block_pool() const;
  const KVBlockManager& block_manager() const;

  // Debug check (every soak-test step): blocks are free or held once (only running requests
  // hold any), slots are held by running requests only. Throws Error naming the culprit.
  void check_consistency() const;

 private:
  // The queues, request storage and step output (src/engine/scheduler_impl.h).
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnrt
