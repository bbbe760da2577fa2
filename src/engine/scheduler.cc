// Scheduler: the step policy. Requests live in a deque and are recycled with their vectors'
// capacity, and every per-step container is reserved up front, so a long run does not grow.

#include "attnrt/engine/scheduler.h"

#include <algorithm>

#include "core/fail.h"
#include "scheduler_impl.h"

namespace attnrt {

Scheduler::Impl::Impl(const EngineConfig& config, const KVCacheConfig& kv_cache_config)
    : max_num_seqs_(config.scheduler.max_num_seqs),
      max_num_batched_tokens_(config.scheduler.max_num_batched_tokens),
      max_model_len_(config.model.max_model_len),
      blocks_(kv_cache_config) {
  if (config.speculative.num_speculative_tokens != 0) {
    fail(
        "scheduler: speculative.num_speculative_tokens is {}, but the engine does not schedule "
        "draft tokens yet; set it to 0",
        config.speculative.num_speculative_tokens);
  }
  if (max_num_seqs_ < 1) fail("scheduler: scheduler.max_num_seqs {} must be >= 1", max_num_seqs_);
  if (max_num_batched_tokens_ < 1) {
    fail("scheduler: scheduler.max_num_batched_tokens {} must be >= 1", max_num_batched_tokens_);
  }
  if (max_model_len_ < 2) {
    fail("scheduler: model.max_model_len {} must be >= 2 (a prompt token and a generated one)",
         max_model_len_);
  }
  const auto seqs = static_cast<std::size_t>(max_num_seqs_);
  running_.reserve(seqs);
  scheduled_.reserve(seqs);
  finished_.reserve(seqs);
  aborted_.reserve(seqs);
  released_.reserve(seqs);
  slot_used_.assign(seqs, 0);
  first_new_column_.assign(static_cast<std::size_t>(blocks_.num_groups()), 0);
  // A step appends at most budget / block_size + 1 blocks per group and scheduled request.
  const std::int64_t most_new_ids = std::min<std::int64_t>(
      blocks_.pool().num_blocks(),
      std::int64_t{blocks_.num_groups()} * (max_num_batched_tokens_ + max_num_seqs_));
  output_.reserve(blocks_.num_groups(), max_num_seqs_, static_cast<int>(most_new_ids));
}

RequestId Scheduler::Impl::add_request(std::span<const std::int32_t> prompt_token_ids,
                                       int max_tokens) {
  const auto prompt_len = static_cast<std::int64_t>(prompt_token_ids.size());
  if (prompt_len == 0) fail("scheduler: a request needs at least one prompt token");
  if (prompt_len >= max_model_len_) {
    fail(
        "scheduler: a prompt of {} tokens leaves no room to generate within model.max_model_len "
        "{}; shorten the prompt or raise max_model_len",
        prompt_len, max_model_len_);
  }
  if (max_tokens < 1) fail("scheduler: max_tokens {} must be >= 1", max_tokens);
  // The last sampled token is never fed back, so at most this many tokens need KV.
  const int max_kv_tokens = static_cast<int>(
      std::min<std::int64_t>(prompt_len + max_tokens, std::int64_t{max_model_len_}) - 1);
  const int max_blocks = blocks_.max_blocks_per_request(max_kv_tokens, max_num_batched_tokens_);
  const int usable_blocks = static_cast<int>(blocks_.pool().num_blocks() - 1);
  if (max_blocks > usable_blocks) {
    fail(
        "scheduler: request {} ({} prompt tokens, max_tokens {}) may need {} KV cache blocks but "
        "the pool has {} ({} short), even with no other request; raise cache.memory, or lower "
        "max_tokens or model.max_model_len",
        next_id_, prompt_len, max_tokens, max_blocks, usable_blocks, max_blocks - usable_blocks);
  }

  Request& request = new_request();
  request.id = next_id_++;
  const int most_tokens = max_kv_tokens + 1;
  request.token_ids.reserve(static_cast<std::size_t>(most_tokens));
  request.token_ids.assign(prompt_token_ids.begin(), prompt_token_ids.end());
  request.num_prompt_tokens = static_cast<int>(prompt_len);
  request.max_tokens = max_tokens;
  blocks_.prepare(request, most_tokens);
  waiting_.push_back(&request);
  return request.id;
}

const SchedulerOutput& Scheduler::Impl::schedule() {
  if (awaiting_output_) {
    fail("scheduler: schedule() called again before update_from_output() of the previous step");
  }
  output_.clear();
  output_.finished.assign(released_.begin(), released_.end());
  released_.clear();
  free_requests_.insert(free_requests_.end(), finished_.begin(), finished_.end());
  finished_.clear();
  free_requests_.insert(free_requests_.end(), aborted_.begin(), aborted_.end());
  aborted_.clear();
  scheduled_.clear();

  int token_budget = max_num_batched_tokens_;
  schedule_running(token_budget);
  // As vLLM does: a step that had to preempt admits nobody, or the victims would thrash.
  if (output_.preempted.empty()) schedule_waiting(token_budget);
  output_.finalize();
  awaiting_output_ = true;
  return output_;
}

void Scheduler::Impl::schedule_running(int& token_budget) {
  for (std::size_t i = 0; i < running_.size() && token_budget > 0; ++i) {
    Request& request = *running_[i];
    const int num_tokens =
        std::min(request.num_tokens() - request.num_computed_tokens, token_budget);
    blocks_.remove_skipped_blocks(request);
    if (!allocate_or_preempt(request, num_tokens)) break;
    add_scheduled(request, num_tokens, /*overwrite=*/false);
    token_budget -= num_tokens;
  }
}

void Scheduler::Impl::schedule_waiting(int& token_budget) {
  while (!waiting_.empty() && token_budget > 0 &&
         static_cast<int>(running_.size()) < max_num_seqs_) {
    Request& request = *waiting_.front();
    const int num_tokens = std::min(request.num_tokens(), token_budget);
    std::fill(first_new_column_.begin(), first_new_column_.end(), 0);
    if (!blocks_.allocate_slots(request, num_tokens)) {
      if (running_.empty()) fail_shortfall(request, num_tokens);
      break;  // FCFS: nobody overtakes the head of the queue
    }
    waiting_.pop_front();
    request.status = RequestStatus::running;
    request.slot = take_slot();
    request.num_prefill_tokens = request.num_tokens();
    running_.push_back(&request);
    add_scheduled(request, num_tokens, /*overwrite=*/true);
    token_budget -= num_tokens;
  }
}

bool Scheduler::Impl::allocate_or_preempt(Request& request, int num_tokens) {
  for (std::size_t g = 0; g < first_new_column_.size(); ++g) {
    first_new_column_[g] = static_cast<int>(request.block_ids[g].size());
  }
  const int total_tokens = request.num_computed_tokens + num_tokens;
  while (!blocks_.allocate_slots(request, total_tokens)) {
    Request& victim = *running_.back();
    if (&victim == &request && running_.size() == 1) fail_shortfall(request, total_tokens);
    running_.pop_back();
    preempt(victim);
    if (&victim == &request) return false;
  }
  return true;
}

void Scheduler::Impl::add_scheduled(Request& request, int num_tokens, bool overwrite) {
  SchedulerEntry entry;
  entry.request = &request;
  entry.slot = request.slot;
  entry.num_computed_tokens = request.num_computed_tokens;
  entry.num_scheduled_tokens = num_tokens;
  entry.is_prefill = request.num_computed_tokens < request.num_prefill_tokens;
  entry.samples = request.num_computed_tokens + num_tokens == request.num_tokens();
  entry.overwrite = overwrite;
  output_.add(entry, first_new_column_);
  scheduled_.push_back(&request);
  request.num_computed_tokens += num_tokens;
}

void Scheduler::Impl::preempt(Request& request) {
  blocks_.free(request);
  output_.preempted.push_back({request.id, request.slot});
  slot_used_[static_cast<std::size_t>(request.slot)] = 0;
  request.slot = -1;
  request.num_computed_tokens = 0;
  request.status = RequestStatus::preempted;
  ++request.num_preemptions;
  ++num_preemptions_;
  waiting_.push_front(&request);
}

std::span<const Request* const> Scheduler::Impl::update_from_output(
    std::span<const std::int32_t> sampled) {
  if (!awaiting_output_) fail("scheduler: update_from_output() called without a schedule()");
  if (sampled.size() != scheduled_.size()) {
    fail("scheduler: update_from_output() got {} sampled tokens for {} scheduled requests",
         sampled.size(), scheduled_.size());
  }
  awaiting_output_ = false;
  for (std::size_t i = 0; i < scheduled_.size(); ++i) {
    Request& request = *scheduled_[i];
    if (request.num_computed_tokens < request.num_tokens()) continue;  // a partial prefill
    request.token_ids.push_back(sampled[i]);
    if (request.num_output_tokens() >= request.max_tokens ||
        request.num_tokens() >= max_model_len_) {
      finish(request);
    }
  }
  std::erase_if(running_, [](const Request* request) { return request->is_finished(); });
  return finished_;
}

void Scheduler::Impl::finish(Request& request) {
  blocks_.free(request);
  released_.push_back({request.id, request.slot});
  slot_used_[static_cast<std::size_t>(request.slot)] = 0;
  request.slot = -1;
  request.status = RequestStatus::finished;
  finished_.push_back(&request);
}

void Scheduler::Impl::abort_request(RequestId id) {
  if (awaiting_output_) {
    fail(
        "scheduler: abort_request({}) between schedule() and update_from_output(); abort "
        "between steps",
        id);
  }
  const auto is_id = [id](const Request* request) { return request->id == id; };
  if (const auto it = std::ranges::find_if(running_, is_id); it != running_.end()) {
    Request& request = **it;
    running_.erase(it);
    blocks_.free(request);
    released_.push_back({request.id, request.slot});  // the engine empties its row next step
    slot_used_[static_cast<std::size_t>(request.slot)] = 0;
    request.slot = -1;
    request.status = RequestStatus::finished;
    aborted_.push_back(&request);
  } else if (const auto queued = std::ranges::find_if(waiting_, is_id); queued != waiting_.end()) {
    Request& request = **queued;  // holds no blocks and no slot
    waiting_.erase(queued);
    request.status = RequestStatus::finished;
    aborted_.push_back(&request);
  } else if (id >= 0 && id < next_id_) {
    fail("scheduler: cannot abort request {}: it already finished or was aborted", id);
  } else {
    fail("scheduler: cannot abort request {}: no such request ({} were added, ids from 0)", id,
         next_id_);
  }
  ++num_aborted_;
}

void Scheduler::Impl::fail_shortfall(const Request& request, int num_tokens) const {
  const int needed = blocks_.num_blocks_needed(request, num_tokens);
  fail(
      "scheduler: request {} needs {} more KV cache blocks for {} tokens, but only {} of {} are "
      "free ({} short) and no other request is left to preempt; raise cache.memory, or lower "
      "model.max_model_len or scheduler.max_num_batched_tokens",
      request.id, needed, num_tokens, blocks_.pool().num_free(), blocks_.pool().num_blocks() - 1,
      needed - blocks_.pool().num_free());
}

Request& Scheduler::Impl::new_request() {
  if (free_requests_.empty()) return storage_.emplace_back();
  Request& request = *free_requests_.back();
  free_requests_.pop_back();
  request.status = RequestStatus::waiting;
  request.num_computed_tokens = 0;
  request.num_prefill_tokens = 0;
  request.slot = -1;
  request.num_preemptions = 0;
  return request;
}

int Scheduler::Impl::take_slot() {
  const auto free_slot = std::find(slot_used_.begin(), slot_used_.end(), 0);
  *free_slot = 1;  // running_.size() < max_num_seqs guarantees one
  return static_cast<int>(free_slot - slot_used_.begin());
}

void Scheduler::Impl::check_consistency() const {
  for (const Request* request : waiting_) {
    if (request->status != RequestStatus::waiting && request->status != RequestStatus::preempted) {
      fail("scheduler check: waiting request {} is {}", request->id,
           request_status_name(request->status));
    }
    for (std::size_t g = 0; g < request->block_ids.size(); ++g) {
      if (!request->block_ids[g].empty()) {
        fail("scheduler check: waiting request {} still holds blocks in group {}", request->id, g);
      }
    }
  }
  std::vector<std::uint8_t> slot_held(slot_used_.size(), 0);
  for (const Request* request : running_) {
    if (request->status != RequestStatus::running || request->slot < 0 ||
        request->slot >= max_num_seqs_) {
      fail("scheduler check: running request {} is {} with slot {}", request->id,
           request_status_name(request->status), request->slot);
    }
    auto& held = slot_held[static_cast<std::size_t>(request->slot)];
    if (held != 0) fail("scheduler check: slot {} is held twice", request->slot);
    held = 1;
  }
  if (slot_held != slot_used_) fail("scheduler check: a slot is marked used but held by nobody");
  blocks_.check_consistency(running_);
}

// The public class: one pointer to Impl, calls forwarded.
Scheduler::Scheduler(const EngineConfig& config, const KVCacheConfig& kv_cache_config)
    : impl_(std::make_unique<Impl>(config, kv_cache_config)) {}
Scheduler::Scheduler(Scheduler&&) noexcept = default;
Scheduler& Scheduler::operator=(Scheduler&&) noexcept = default;
Scheduler::~Scheduler() = default;

RequestId Scheduler::add_request(std::span<const std::int32_t> prompt_token_ids, int max_tokens) {
  return impl_->add_request(prompt_token_ids, max_tokens);
}
const SchedulerOutput& Scheduler::schedule() {
  return impl_->schedule();
}
std::span<const Request* const> Scheduler::update_from_output(
    std::span<const std::int32_t> sampled) {
  return impl_->update_from_output(sampled);
}
void Scheduler::abort_request(RequestId id) {
  impl_->abort_request(id);
}
void Scheduler::check_consistency() const {
  impl_->check_consistency();
}

bool Scheduler::has_unfinished_requests() const {
  return !impl_->waiting_.empty() || !impl_->running_.empty();
}
int Scheduler::num_waiting() const {
  return static_cast<int>(impl_->waiting_.size());
}
int Scheduler::num_running() const {
  return static_cast<int>(impl_->running_.size());
}
std::span<const Request* const> Scheduler::running() const {
  return impl_->running_;
}
std::int64_t Scheduler::num_preemptions() const {
  return impl_->num_preemptions_;
}
std::int64_t Scheduler::num_aborted() const {
  return impl_->num_aborted_;
}
const BlockPool& Scheduler::block_pool() const {
  return impl_->blocks_.pool();
}
const KVBlockManager& Scheduler::block_manager() const {
  return impl_->blocks_;
}

}  // namespace attnrt
