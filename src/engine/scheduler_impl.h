#pragma once
// Scheduler's state, out of the public header: the request storage and queues, the block manager
// and the step output. The public class forwards to it (src/engine/scheduler.cc); a move hands
// over the pointer, so Requests and the output stay where they are.

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "attnrt/engine/scheduler.h"
#include "core/hidden.h"

namespace attnrt {

struct ATTNRT_HIDDEN Scheduler::Impl {
  Impl(const EngineConfig& config, const KVCacheConfig& kv_cache_config);
  Impl(const Impl&) = delete;  // requests and outputs point into its storage
  Impl& operator=(const Impl&) = delete;

  RequestId add_request(std::span<const std::int32_t> prompt_token_ids, int max_tokens);
  const SchedulerOutput& schedule();
  std::span<const Request* const> update_from_output(std::span<const std::int32_t> sampled);
  void abort_request(RequestId id);
  void check_consistency() const;

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
