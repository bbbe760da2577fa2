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
#include <deque>
#include <span>
#include <vector>

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
  Scheduler(Scheduler&&) = default;
  Scheduler& operator=(Scheduler&&) = default;

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

  bool has_unfinished_requests() const { return !waiting_.empty() || !running_.empty(); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int num_running() const { return static_cast<int>(running_.size()); }
  std::span<const Request* const> running() const { return running_; }  // admission order
  std::int64_t num_preemptions() const { return num_preemptions_; }     // since construction
  std::int64_t num_aborted() const { return num_aborted_; }             // since construction
  const BlockPool& block_pool() const { return blocks_.pool(); }
  const KVBlockManager& block_manager() const { return blocks_; }

  // Debug check (every soak-test step): blocks are free or held once (only running requests
  // hold any), slots are held by running requests only. Throws Error naming the culprit.
  void check_consistency() const;

 private:
  void schedule_running(int& token_budget);
  void schedule_waiting(int& token_budget);
  // Gets blocks for `num_tokens` more tokens, preempting from the back of running_; false when
  // `request` itself was preempted.
  bool allocate_or_preempt(Request& request, int num_tokens);
  void add_scheduled(Request& request, int num_tokens, bool overwrite);
  void preempt(Request& request);
  void finish(Request& request);
  // A guard: add_request already rejects requests that could not fit alone.
  [[noreturn]] void fail_shortfall(const Request& request, int num_tokens) const;
  Request& new_request();
  int take_slot();

  int max_num_seqs_;
  int max_num_batched_tokens_;
  int max_model_len_;
  KVBlockManager blocks_;
  std::deque<Request> storage_;  // stable addresses; recycled through free_requests_
  std::vector<Request*> free_requests_;
  std::deque<Request*> waiting_;   // FCFS; preempted requests go back to the front
  std::vector<Request*> running_;  // admission order
  std::vector<std::uint8_t> slot_used_;
  std::vector<Request*> scheduled_;        // output_.scheduled's requests, mutable
  std::vector<Request*> finished_;         // by the last update_from_output
  std::vector<Request*> aborted_;          // since the last schedule(), recycled by the next
  std::vector<ReleasedRequest> released_;  // finished slots, reported by the next schedule()
  std::vector<int> first_new_column_;      // scratch: per group
  SchedulerOutput output_;
  bool awaiting_output_ = false;
  RequestId next_id_ = 0;
  std::int64_t num_preemptions_ = 0;
  std::int64_t num_aborted_ = 0;
};

}  // namespace attnrt
