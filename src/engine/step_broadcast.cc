// The step message, all int64: kind (0 stop, 1 step), then the released requests (count, then
// id and slot of each) finished and preempted, then the scheduled entries (count, then per
// entry: id, slot, computed, scheduled, prefill tokens, flags, the scheduled tokens, and per KV
// cache group the count and ids of its new blocks).

#include "step_broadcast.h"

#include "core/fail.h"

namespace attnrt {
namespace {

enum MessageKind : std::int64_t { kStop = 0, kStep = 1 };
constexpr std::int64_t kIsPrefill = 1;
constexpr std::int64_t kSamples = 2;
constexpr std::int64_t kOverwrite = 4;

void append_released(std::vector<std::int64_t>& message,
                     const std::vector<ReleasedRequest>& released) {
  message.push_back(static_cast<std::int64_t>(released.size()));
  for (const ReleasedRequest& r : released) {
    message.push_back(r.request_id);
    message.push_back(r.slot);
  }
}

}  // namespace

StepBroadcast::StepBroadcast(Communicator& communicator, int num_groups, int max_num_seqs)
    : communicator_(communicator) {
  output_.reserve(num_groups, max_num_seqs, 0);
  first_new_column_.assign(static_cast<std::size_t>(num_groups), 0);
}

void StepBroadcast::send(const SchedulerOutput& output) {
  message_.assign(1, kStep);
  append_released(message_, output.finished);
  append_released(message_, output.preempted);
  message_.push_back(static_cast<std::int64_t>(output.scheduled.size()));
  for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
    const SchedulerEntry& entry = output.scheduled[i];
    const Request& request = *entry.request;
    const std::int64_t flags = (entry.is_prefill ? kIsPrefill : 0) |
                               (entry.samples ? kSamples : 0) | (entry.overwrite ? kOverwrite : 0);
    message_.insert(message_.end(),
                    {request.id, entry.slot, entry.num_computed_tokens, entry.num_scheduled_tokens,
                     request.num_prefill_tokens, flags});
    const auto first = request.token_ids.begin() + entry.num_computed_tokens;
    message_.insert(message_.end(), first, first + entry.num_scheduled_tokens);
    for (const std::span<const BlockId> ids : output.new_block_ids(static_cast<int>(i))) {
      message_.push_back(static_cast<std::int64_t>(ids.size()));
      message_.insert(message_.end(), ids.begin(), ids.end());
    }
  }
  broadcast_values(communicator_, message_, 0);
}

void StepBroadcast::send_stop() {
  message_.assign(1, kStop);
  broadcast_values(communicator_, message_, 0);
}

const SchedulerOutput* StepBroadcast::receive() {
  broadcast_values(communicator_, message_, 0);
  read_ = 0;
  if (next() == kStop) return nullptr;
  decode();
  if (read_ != message_.size()) {
    fail("tensor parallel: rank 0's step message has {} values past its end",
         message_.size() - read_);
  }
  return &output_;
}

std::int64_t StepBroadcast::next() {
  if (read_ >= message_.size()) {
    fail("tensor parallel: rank 0's step message ends after {} values", message_.size());
  }
  return message_[read_++];
}

void StepBroadcast::decode() {
  output_.clear();
  decode_released(output_.finished, /*forget=*/true);
  decode_released(output_.preempted, /*forget=*/false);
  const std::int64_t num_scheduled = next();
  for (std::int64_t i = 0; i < num_scheduled; ++i) decode_entry();
  output_.finalize();
}

// A finished (or aborted) request's mirror goes; a preempted one keeps its tokens and loses its
// blocks, which come back whole when it is admitted again (overwrite).
void StepBroadcast::decode_released(std::vector<ReleasedRequest>& released, bool forget) {
  const std::int64_t count = next();
  for (std::int64_t i = 0; i < count; ++i) {
    ReleasedRequest& r = released.emplace_back();
    r.request_id = next();
    r.slot = static_cast<int>(next());
    if (forget) {
      mirrors_.erase(r.request_id);
    } else if (auto it = mirrors_.find(r.request_id); it != mirrors_.end()) {
      for (auto& ids : it->second.block_ids) ids.clear();
    }
  }
}

void StepBroadcast::decode_entry() {
  const RequestId id = next();
  Request& request = mirrors_[id];
  request.id = id;
  SchedulerEntry entry;
  entry.request = &request;
  entry.slot = static_cast<int>(next());
  entry.num_computed_tokens = static_cast<int>(next());
  entry.num_scheduled_tokens = static_cast<int>(next());
  request.num_prefill_tokens = static_cast<int>(next());
  const std::int64_t flags = next();
  entry.is_prefill = (flags & kIsPrefill) != 0;
  entry.samples = (flags & kSamples) != 0;
  entry.overwrite = (flags & kOverwrite) != 0;
  if (entry.num_computed_tokens < 0 || entry.num_scheduled_tokens < 0) {
    fail("tensor parallel: rank 0 scheduled {} tokens after {} for request {}",
         entry.num_scheduled_tokens, entry.num_computed_tokens, id);
  }
  const auto end = static_cast<std::size_t>(entry.num_computed_tokens) +
                   static_cast<std::size_t>(entry.num_scheduled_tokens);
  if (request.token_ids.size() < end) request.token_ids.resize(end, 0);
  for (std::size_t t = static_cast<std::size_t>(entry.num_computed_tokens); t < end; ++t) {
    request.token_ids[t] = static_cast<std::int32_t>(next());
  }
  request.block_ids.resize(first_new_column_.size());
  for (std::size_t g = 0; g < first_new_column_.size(); ++g) {
    std::vector<BlockId>& ids = request.block_ids[g];
    if (entry.overwrite) ids.clear();
    first_new_column_[g] = static_cast<int>(ids.size());
    const std::int64_t count = next();
    for (std::int64_t k = 0; k < count; ++k) ids.push_back(static_cast<BlockId>(next()));
  }
  output_.add(entry, first_new_column_);
}

}  // namespace attnrt
