// One engine step (DESIGN.md §4): scheduler output → block-table rows → input batch → graph
// dispatch and padding → block tables and slot mappings → fast-prefill rows → attention metadata
// (a FULL graph replays its captured metadata; other steps build it) → model → greedy sampling.

#include <algorithm>
#include <chrono>

#include "attnrt/core/error.h"
#include "attnrt/engine/engine.h"
#include "captured_graphs.h"
#include "engine_impl.h"
#include "engine_work.h"
#include "step_broadcast.h"

namespace attnrt {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

bool Engine::Impl::step() {
  const Clock::time_point start = Clock::now();
  const SchedulerOutput* next = next_step_output();
  if (next == nullptr) return false;
  const SchedulerOutput& output = *next;
  const bool leader = rank() == 0;
  apply_scheduler_output(output);
  if (output.scheduled.empty()) {  // every running request was preempted; they resume later
    sampled_.clear();
    if (leader) scheduler_.update_from_output(sampled_);
    return true;
  }
  lay_out_batch(output);
  descriptor_ = graphs_.dispatch(batch_.num_reqs(), batch_.num_tokens(),
                                 batch_.uniform_decode_token_count(), 0, batch_.max_query_len());
  batch_.pad_to(descriptor_);  // runs the replay-side check
  std::fill(token_ids_.begin() + batch_.num_tokens(),
            token_ids_.begin() + batch_.num_tokens_padded(), 0);
  map_slots(batch_.is_padding());

  std::optional<FastPrefillBatchMetadata> fast_prefill;
  if (fast_prefill_) {
    fast_prefill =
        fast_prefill_->prepare(batch_.logits_indices(), batch_.num_reqs(), batch_.cu_num_logits(),
                               batch_.has_prefill(), descriptor_);
  }
  // A FULL graph replays: its arrays were just rewritten in place, its scalars stay frozen.
  const std::span<const AttentionMetadata* const> metadata =
      descriptor_.cg_mode == CUDAGraphMode::FULL
          ? captured_->replay(descriptor_)
          : build_eager_metadata(fast_prefill ? &*fast_prefill : nullptr);
  run_model(metadata, fast_prefill);
  if (leader) {
    sample(output);
    for (const Request* request : scheduler_.update_from_output(sampled_)) {
      records_[static_cast<std::size_t>(request->id)].finished = true;
      ++num_finished_;
    }
  }
  count_step(output, seconds_since(start));
  if (fast_prefill) count_fast_prefill(*fast_prefill, forward_seconds_);
  return true;
}

// Rank 0 schedules (and tells the other ranks); the others take what it sent.
const SchedulerOutput* Engine::Impl::next_step_output() {
  if (rank() != 0) return step_broadcast_->receive();
  if (!scheduler_.has_unfinished_requests()) {
    if (step_broadcast_) step_broadcast_->send_stop();
    return nullptr;
  }
  const SchedulerOutput& output = scheduler_.schedule();
  if (step_broadcast_) step_broadcast_->send(output);
  return &output;
}

// Rows of released requests are emptied first: a request admitted this step may reuse the slot.
void Engine::Impl::apply_scheduler_output(const SchedulerOutput& output) {
  for (const ReleasedRequest& released : output.finished) {
    block_tables_.remove_request(released.slot);
  }
  for (const ReleasedRequest& released : output.preempted) {
    block_tables_.remove_request(released.slot);
  }
  for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
    const auto& entry = output.scheduled[i];
    block_tables_.append_block_ids(entry.slot, output.new_block_ids(static_cast<int>(i)),
                                   entry.overwrite);
  }
  stats_.peak_kv_blocks = std::max(stats_.peak_kv_blocks, num_kv_blocks_in_use());
  stats_.preemptions = scheduler_.num_preemptions();
}

void Engine::Impl::lay_out_batch(const SchedulerOutput& output) {
  scheduled_.clear();
  int row = 0;
  for (const auto& entry : output.scheduled) {
    const Request& request = *entry.request;
    scheduled_.push_back(ScheduledRequest{entry.slot, entry.num_computed_tokens,
                                          entry.num_scheduled_tokens, request.num_prefill_tokens,
                                          0});
    std::copy_n(request.token_ids.begin() + entry.num_computed_tokens, entry.num_scheduled_tokens,
                token_ids_.begin() + row);
    row += entry.num_scheduled_tokens;
  }
  batch_.prepare(scheduled_);
}

void Engine::Impl::map_slots(std::span<const std::uint8_t> is_padding) {
  block_tables_.gather_block_tables(batch_.idx_mapping(), batch_.num_reqs_padded());
  block_tables_.compute_slot_mappings(batch_.idx_mapping(), batch_.query_start_loc(),
                                      batch_.positions(), batch_.num_tokens_padded(), is_padding);
  block_tables_.translate_slot_mappings(plan_.backends.attn_groups);
}

std::span<const AttentionMetadata* const> Engine::Impl::build_eager_metadata(
    const FastPrefillBatchMetadata* fast_prefill) {
  AttentionMetadataInputs inputs = make_attention_metadata_inputs(batch_, block_tables_);
  inputs.fast_prefill = fast_prefill;
  build_attn_metadata(plan_.backends.attn_groups, inputs, metadata_);
  const ForwardContext& context = plan_.kv.forward_context;
  for (std::size_t l = 0; l < context.size(); ++l) {
    eager_metadata_[l] = &metadata_.at(context.layers()[l].name());
  }
  return eager_metadata_;
}

void Engine::Impl::run_model(std::span<const AttentionMetadata* const> metadata,
                             const std::optional<FastPrefillBatchMetadata>& fast_prefill) {
  ModelStep step;
  step.num_tokens = batch_.num_tokens_padded();
  step.token_ids =
      std::span<const std::int32_t>(token_ids_).first(static_cast<std::size_t>(step.num_tokens));
  step.positions = batch_.positions();
  step.metadata = metadata;
  step.logits_indices = batch_.logits_indices();
  if (fast_prefill) {
    step.logits_indices_padded = fast_prefill->logits_indices_padded;
    step.num_logits_indices = fast_prefill->num_logits_indices;
  }
  const Clock::time_point start = Clock::now();
  model_.forward(step);
  forward_seconds_ = seconds_since(start);
  stats_.forward_seconds += forward_seconds_;
}

// Greedy: each request's token is the argmax of its last row's logits.
void Engine::Impl::sample(const SchedulerOutput& output) {
  sampled_.clear();
  for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
    const auto& entry = output.scheduled[i];
    const std::span<const float> logits = model_.logits_row(static_cast<int>(i));
    const int token = greedy_token(logits);
    sampled_.push_back(token);
    if (!entry.samples) continue;  // a prefill chunk short of the prompt's end
    RequestRecord& record = records_[static_cast<std::size_t>(entry.request->id)];
    record.output.push_back(token);
    if (options_.record_logits)
      record.logits.insert(record.logits.end(), logits.begin(), logits.end());
  }
}

void Engine::Impl::count_step(const SchedulerOutput& output, double step_seconds) {
  std::int64_t prefill = 0;
  std::int64_t decode = 0;
  for (const auto& entry : output.scheduled) {
    (entry.is_prefill ? prefill : decode) += entry.num_scheduled_tokens;
  }
  const double total = static_cast<double>(prefill + decode);
  stats_.steps += 1;
  stats_.steps_by_mode[EngineStats::runtime_mode_index(descriptor_.cg_mode)] += 1;
  stats_.prefill_tokens += prefill;
  stats_.decode_tokens += decode;
  stats_.prefill_seconds += step_seconds * static_cast<double>(prefill) / total;
  stats_.decode_seconds += step_seconds * static_cast<double>(decode) / total;
  stats_.padded_tokens += batch_.num_tokens_padded() - batch_.num_tokens();
  stats_.padded_requests += batch_.num_reqs_padded() - batch_.num_reqs();
}

// Rows each fast-prefill layer skipped, and the share of the step's layer work they were.
void Engine::Impl::count_fast_prefill(const FastPrefillBatchMetadata& fast_prefill,
                                      double forward_seconds) {
  const int first = model_.first_fast_prefill_layer();
  const int num_layers = model_.num_layers();
  if (first >= num_layers) return;  // no layer takes the fast-prefill path
  const std::span<const std::int32_t> rows = fast_prefill.logits_indices_padded;
  const std::span<const std::int64_t> positions = batch_.positions();
  for (std::size_t j = 0; j < rows.size(); ++j) fast_prefill_positions_[j] = positions[rows[j]];
  const std::span<const std::int64_t> reduced(fast_prefill_positions_.data(), rows.size());
  const double run_rows = work_->rows(first, num_layers, reduced);
  const double done = work_->rows(0, first, positions) + run_rows +
                      work_->logits(static_cast<int>(batch_.logits_indices().size()));
  const double skipped = work_->rows(first, num_layers, positions) - run_rows;
  stats_.fast_prefill_steps += 1;
  stats_.fast_prefill_rows_skipped +=
      batch_.num_tokens_padded() - static_cast<std::int64_t>(rows.size());
  stats_.fast_prefill_work_done += done;
  stats_.fast_prefill_work_skipped += skipped;
  stats_.fast_prefill_seconds_saved += forward_seconds * skipped / done;
}

}  // namespace attnrt
