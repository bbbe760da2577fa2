// SchedulerOutput: new block ids are kept in one flat array with per-(request, group) offsets;
// the spans handed to BlockTables are built once the step is complete.

#include "attnrt/engine/scheduler_output.h"

namespace attnrt {

std::span<const std::span<const BlockId>> SchedulerOutput::new_block_ids(int index) const {
  return std::span(spans_).subspan(static_cast<std::size_t>(index) * num_groups_,
                                   static_cast<std::size_t>(num_groups_));
}

void SchedulerOutput::reserve(int num_groups, int max_num_seqs, int max_new_block_ids) {
  num_groups_ = num_groups;
  const auto seqs = static_cast<std::size_t>(max_num_seqs);
  scheduled.reserve(seqs);
  finished.reserve(seqs);
  preempted.reserve(seqs);
  block_ids_.reserve(static_cast<std::size_t>(max_new_block_ids));
  offsets_.reserve(seqs * num_groups + 1);
  spans_.reserve(seqs * num_groups);
  clear();
}

void SchedulerOutput::clear() {
  scheduled.clear();
  finished.clear();
  preempted.clear();
  total_num_scheduled_tokens = 0;
  has_prefill = false;
  block_ids_.clear();
  offsets_.assign(1, 0);
  spans_.clear();
}

void SchedulerOutput::add(const SchedulerEntry& entry, std::span<const int> first_new_column) {
  scheduled.push_back(entry);
  total_num_scheduled_tokens += entry.num_scheduled_tokens;
  has_prefill = has_prefill || entry.is_prefill;
  for (int g = 0; g < num_groups_; ++g) {
    const auto& ids = entry.request->block_ids[static_cast<std::size_t>(g)];
    block_ids_.insert(block_ids_.end(), ids.begin() + first_new_column[g], ids.end());
    offsets_.push_back(static_cast<int>(block_ids_.size()));
  }
}

void SchedulerOutput::finalize() {
  spans_.clear();
  const std::span<const BlockId> all(block_ids_);
  for (std::size_t i = 0; i + 1 < offsets_.size(); ++i) {
    spans_.push_back(all.subspan(static_cast<std::size_t>(offsets_[i]),
                                 static_cast<std::size_t>(offsets_[i + 1] - offsets_[i])));
  }
}

}  // namespace attnrt
