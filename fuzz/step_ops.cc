// The operations of fuzz_step_inputs (step_ops.h). Each decodes its arguments from the bytes,
// predicts from the model whether the library's documented checks accept them, calls, and
// compares: an Error must come exactly when predicted and leave the state as it was.

#include "step_ops.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <span>

#include "attnrt/core/error.h"

namespace attnrt::fuzz {
namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

template <typename T>
std::vector<T> copy_of(std::span<const T> values) {
  return {values.begin(), values.end()};
}

// True when `call` returned, false when it threw attnrt::Error (anything else propagates).
template <typename Call>
bool succeeds(Call&& call) {
  try {
    call();
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

BatchSnapshot BatchSnapshot::of(const InputBatch& batch) {
  return {batch.num_reqs(),
          batch.num_tokens(),
          batch.num_reqs_padded(),
          batch.num_tokens_padded(),
          batch.max_query_len(),
          batch.max_seq_len(),
          batch.has_prefill(),
          copy_of(batch.idx_mapping()),
          copy_of(batch.query_start_loc()),
          copy_of(batch.seq_lens()),
          copy_of(batch.logits_indices()),
          copy_of(batch.positions()),
          copy_of(batch.is_padding())};
}

StepOps::StepOps(StepRig& rig, ByteReader& in)
    : rig_(rig),
      in_(in),
      num_groups_(rig.tables.num_groups()),
      max_reqs_(rig.tables.max_num_reqs()),
      max_tokens_(rig.tables.max_num_tokens()),
      num_blocks_(rig.plan.kv.kv_cache_config.num_blocks) {
  check(num_blocks_ > 0 && num_blocks_ <= 65536, "step plan block count", num_blocks_);
  slots_.resize(static_cast<std::size_t>(max_reqs_));
  for (SlotModel& slot : slots_) slot.ids.resize(static_cast<std::size_t>(num_groups_));
  if (in_.flag()) rig_.graphs.mark_captured();  // before capture every dispatch is eager
}

// Mostly a real slot; sometimes one past the end, -1 or a raw value.
int StepOps::pick_slot() {
  const std::uint8_t kind = in_.byte();
  if (kind < 240) return kind % max_reqs_;
  if (kind < 244) return max_reqs_;
  if (kind < 248) return -1;
  return in_.int32();
}

// Mostly a block of the cache; sometimes the first id past it, -1 or a raw value.
std::int32_t StepOps::block_id() {
  const std::uint8_t kind = in_.byte();
  if (kind < 232) return in_.below(static_cast<int>(num_blocks_));
  if (kind < 240) return static_cast<std::int32_t>(num_blocks_);
  if (kind < 248) return -1;
  return in_.int32();
}

void StepOps::append(bool overwrite) {
  const int slot = pick_slot();
  const bool valid_slot = slot >= 0 && slot < max_reqs_;
  bool ok = valid_slot;
  std::vector<std::vector<std::int32_t>> ids(static_cast<std::size_t>(num_groups_));
  for (int g = 0; g < num_groups_; ++g) {
    const int ratio = rig_.tables.geometry(g).ratio;
    const int capacity = rig_.tables.row_capacity(g) / ratio;  // manager blocks per row
    std::vector<std::int32_t>& group_ids = ids[static_cast<std::size_t>(g)];
    group_ids.resize(static_cast<std::size_t>(in_.flag() ? in_.below(4) : in_.below(capacity + 2)));
    for (std::int32_t& id : group_ids) {
      id = block_id();
      ok = ok && id >= 0 && id < num_blocks_;
    }
    const std::size_t held =
        valid_slot && !overwrite ? slots_[static_cast<std::size_t>(slot)].ids[g].size() : 0;
    ok = ok &&
         static_cast<std::int64_t>(held + group_ids.size()) * ratio <= rig_.tables.row_capacity(g);
  }
  const int prompt = in_.below(300);
  const std::vector<std::span<const std::int32_t>> spans(ids.begin(), ids.end());
  const bool done = succeeds([&] { rig_.tables.append_block_ids(slot, spans, overwrite); });
  check(done == ok,
        ok ? "append_block_ids rejected a valid append" : "append_block_ids accepted a bad one",
        slot);
  if (!done) return;  // check_tables shows that nothing was written
  SlotModel& model = slots_[static_cast<std::size_t>(slot)];
  if (overwrite) model = SlotModel{std::vector<std::vector<std::int32_t>>(ids.size()), 0, prompt};
  for (std::size_t g = 0; g < ids.size(); ++g) {
    model.ids[g].insert(model.ids[g].end(), ids[g].begin(), ids[g].end());
  }
}

void StepOps::remove() {
  const int slot = pick_slot();
  const bool done = succeeds([&] { rig_.tables.remove_request(slot); });
  check(done == (slot >= 0 && slot < max_reqs_), "remove_request", slot);
  if (done) {
    slots_[static_cast<std::size_t>(slot)] = SlotModel{
        std::vector<std::vector<std::int32_t>>(static_cast<std::size_t>(num_groups_)), 0, 0};
  }
}

ScheduledRequest StepOps::scheduled_request() {
  ScheduledRequest r;
  r.req_index = pick_slot();
  if (in_.byte() < 208) {  // as a scheduler would: the slot's own counts
    const bool valid = r.req_index >= 0 && r.req_index < max_reqs_;
    const SlotModel* model = valid ? &slots_[static_cast<std::size_t>(r.req_index)] : nullptr;
    r.num_computed_tokens = model != nullptr ? model->computed : 0;
    r.num_prompt_tokens = model != nullptr ? model->prompt : 0;
    r.num_scheduled_tokens = 1 + in_.below(16);
    r.num_draft_tokens = std::min(in_.below(3), r.num_scheduled_tokens - 1);
  } else {
    r.num_computed_tokens = in_.count(512);
    r.num_scheduled_tokens = in_.count(64);
    r.num_prompt_tokens = in_.count(512);
    r.num_draft_tokens = in_.count(4);
  }
  return r;
}

// InputBatch::prepare's documented checks (input_batch.h), with one bonus token per request.
bool StepOps::prepare_should_succeed(const std::vector<ScheduledRequest>& requests) const {
  if (requests.size() > static_cast<std::size_t>(max_reqs_)) return false;
  std::int64_t tokens = 0;
  for (const ScheduledRequest& r : requests) {
    if (r.req_index < 0 || r.req_index >= max_reqs_) return false;
    if (r.num_scheduled_tokens <= 0 || r.num_computed_tokens < 0 || r.num_draft_tokens < 0) {
      return false;
    }
    if (static_cast<std::int64_t>(r.num_draft_tokens) + 1 > r.num_scheduled_tokens) return false;
    if (static_cast<std::int64_t>(r.num_computed_tokens) + r.num_scheduled_tokens > kMaxInt32) {
      return false;
    }
    tokens += r.num_scheduled_tokens;
  }
  return tokens <= max_tokens_;
}

// The layout of SEMANTICS §2.8 / §6.3: token rows in request order, logits on the last rows.
void StepOps::check_prepared(const std::vector<ScheduledRequest>& requests) const {
  const InputBatch& b = rig_.batch;
  check(b.num_reqs() == static_cast<int>(requests.size()), "prepared request count", b.num_reqs());
  int token = 0;
  int logits = 0;
  bool prefill = false;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ScheduledRequest& r = requests[i];
    check(b.idx_mapping()[i] == r.req_index, "idx_mapping", static_cast<long long>(i));
    check(b.query_start_loc()[i] == token, "query_start_loc", static_cast<long long>(i));
    for (int j = 0; j < r.num_scheduled_tokens; ++j) {
      check(b.positions()[static_cast<std::size_t>(token + j)] == r.num_computed_tokens + j,
            "positions", token + j);
    }
    token += r.num_scheduled_tokens;
    for (int j = r.num_draft_tokens; j >= 0; --j, ++logits) {
      check(b.logits_indices()[static_cast<std::size_t>(logits)] == token - 1 - j, "logits_indices",
            logits);
    }
    check(b.seq_lens()[i] == r.num_computed_tokens + r.num_scheduled_tokens, "seq_lens",
          static_cast<long long>(i));
    prefill = prefill || r.num_computed_tokens < r.num_prompt_tokens;
  }
  check(b.num_tokens() == token && b.num_tokens_padded() == token, "prepared token count", token);
  check(b.logits_indices().size() == static_cast<std::size_t>(logits), "logits count", logits);
  check(b.has_prefill() == prefill, "has_prefill", prefill);
}

void StepOps::step() {
  std::vector<ScheduledRequest> requests(static_cast<std::size_t>(in_.below(max_reqs_ + 2)));
  for (ScheduledRequest& r : requests) r = scheduled_request();
  const BatchSnapshot before = BatchSnapshot::of(rig_.batch);
  const bool ok = prepare_should_succeed(requests);
  const bool done = succeeds([&] { rig_.batch.prepare(requests); });
  check(done == ok, ok ? "prepare rejected a valid batch" : "prepare accepted a bad batch",
        static_cast<long long>(requests.size()));
  if (!done) {
    check(BatchSnapshot::of(rig_.batch) == before, "prepare changed the batch, then threw");
    return;
  }
  prepared_ = requests;
  check_prepared(requests);
  if (in_.byte() < 224) {
    pad(in_.byte() < 240 ? 0 : in_.below(4));
  } else {
    pad_raw();
  }
  if (map_slots()) finish_step();
}

// As the engine pads: to dispatch's answer, which pad_to must accept. dispatch maps the active
// LoRA count to its capture case (1 -> 2 with cases {0, 2}); the runner carries the descriptor's
// count from there on, as vLLM's does (fuzz/findings/: padding with the raw count is refused).
void StepOps::pad(int num_active_loras) {
  const InputBatch& b = rig_.batch;
  descriptor_ = rig_.graphs.dispatch(b.num_reqs(), b.num_tokens(), b.uniform_decode_token_count(),
                                     num_active_loras, b.max_query_len());
  num_active_loras_ = descriptor_.num_active_loras;
  dispatched_ = true;
  const bool done = succeeds([&] { rig_.batch.pad_to(descriptor_, num_active_loras_); });
  check(done, "pad_to rejected the descriptor dispatch chose", descriptor_.num_tokens);
  check(b.num_tokens_padded() == descriptor_.num_tokens &&
            b.num_reqs_padded() == descriptor_.num_reqs.value_or(b.num_reqs()),
        "padded sizes differ from the descriptor", b.num_tokens_padded());
}

// Every real token lies in a block its request holds, in every group.
bool StepOps::slots_should_map() const {
  for (const ScheduledRequest& r : prepared_) {
    const SlotModel& model = slots_[static_cast<std::size_t>(r.req_index)];
    const std::int64_t last =
        static_cast<std::int64_t>(r.num_computed_tokens) + r.num_scheduled_tokens - 1;
    for (int g = 0; g < num_groups_; ++g) {
      const std::int64_t block = last / rig_.tables.geometry(g).manager_block_size;
      if (block >= static_cast<std::int64_t>(model.ids[g].size())) return false;
    }
  }
  return true;
}

bool StepOps::map_slots() {
  const InputBatch& b = rig_.batch;
  const bool gathered =
      succeeds([&] { rig_.tables.gather_block_tables(b.idx_mapping(), b.num_reqs_padded()); });
  check(gathered, "gather_block_tables rejected a prepared batch", b.num_reqs_padded());
  check_gathered(copy_of(b.idx_mapping()), b.num_reqs_padded());
  const bool ok = slots_should_map();
  const bool done = succeeds([&] {
    rig_.tables.compute_slot_mappings(b.idx_mapping(), b.query_start_loc(), b.positions(),
                                      b.num_tokens_padded(), b.is_padding());
  });
  check(done == ok,
        ok ? "compute_slot_mappings rejected a mapped batch"
           : "compute_slot_mappings accepted "
             "a token past its blocks",
        b.num_tokens());
  if (!done) return false;
  const bool translated =
      succeeds([&] { rig_.tables.translate_slot_mappings(rig_.plan.backends.attn_groups); });
  check(translated, "translate_slot_mappings refused the plan's own attention groups");
  check_slots();
  return true;
}

// Token j of a request at position p: manager slot ids[p / block] * block + p % block, in kernel
// slots where the group is translated; padding and rows past the real tokens are PAD_SLOT_ID.
void StepOps::check_slots() const {
  const InputBatch& b = rig_.batch;
  for (int g = 0; g < num_groups_; ++g) {
    const KernelBlockGeometry& geo = rig_.tables.geometry(g);
    const std::span<const std::int64_t> slots = rig_.tables.slot_mapping(g);
    check(slots.size() == static_cast<std::size_t>(b.num_tokens_padded()), "slot mapping size",
          static_cast<long long>(slots.size()));
    std::size_t t = 0;
    for (const ScheduledRequest& r : prepared_) {
      const SlotModel& model = slots_[static_cast<std::size_t>(r.req_index)];
      for (int j = 0; j < r.num_scheduled_tokens; ++j, ++t) {
        const std::int64_t position = r.num_computed_tokens + j;
        const std::int64_t block =
            model.ids[g][static_cast<std::size_t>(position / geo.manager_block_size)];
        std::int64_t expected = block * geo.manager_block_size + position % geo.manager_block_size;
        if (rig_.translated(g)) expected = geo.map_to_kernel_slot(expected);
        check(slots[t] == expected, "slot mapping", static_cast<long long>(t));
      }
    }
    for (; t < slots.size(); ++t)
      check(slots[t] == PAD_SLOT_ID, "padded slot", static_cast<long long>(t));
  }
}

void StepOps::check_gathered(const std::vector<std::int32_t>& idx_mapping,
                             int num_reqs_padded) const {
  for (int g = 0; g < num_groups_; ++g) {
    const KernelBlockGeometry& geo = rig_.tables.geometry(g);
    const BlockTableView view = rig_.tables.block_table(g);
    check(view.num_rows == num_reqs_padded, "gathered rows", view.num_rows);
    for (int i = 0; i < num_reqs_padded; ++i) {
      const std::span<const std::int32_t> row = view.row(i);
      if (i >= static_cast<int>(idx_mapping.size())) {
        check(std::all_of(row.begin(), row.end(), [](std::int32_t id) { return id == 0; }),
              "padded block-table row", i);
        continue;
      }
      const std::vector<std::int32_t>& ids =
          slots_[static_cast<std::size_t>(idx_mapping[static_cast<std::size_t>(i)])].ids[g];
      for (std::size_t k = 0; k < ids.size() * static_cast<std::size_t>(geo.ratio); ++k) {
        check(row[k] == geo.kernel_block_id(ids[k / geo.ratio], static_cast<int>(k % geo.ratio)),
              "gathered block id", static_cast<long long>(k));
      }
    }
  }
}

// Whether a runner could really see the prepared batch: requests, and every query either a
// prefill chunk, a single decode token, or drafts + 1 being verified (not e.g. 5 new tokens of a
// request that is past its prompt and verifies nothing).
bool StepOps::has_drafts() const {
  return std::any_of(prepared_.begin(), prepared_.end(),
                     [](const ScheduledRequest& r) { return r.num_draft_tokens > 0; });
}

bool StepOps::runner_batch() const {
  if (prepared_.empty()) return false;
  return std::all_of(prepared_.begin(), prepared_.end(), [](const ScheduledRequest& r) {
    return r.num_computed_tokens < r.num_prompt_tokens ||
           r.num_scheduled_tokens == r.num_draft_tokens + 1;
  });
}

// Fast prefill and metadata, then the requests' next step starts after these tokens. The
// engine never builds eager metadata for a FULL graph (it replays the captured one).
void StepOps::finish_step() {
  const InputBatch& b = rig_.batch;
  // Draft tokens with fast prefill are left out: the engine runs no speculative decoding, and
  // their metadata refusal is an open finding (fuzz/findings/).
  const bool engine_step = dispatched_ && runner_batch() && !(rig_.fast_prefill && has_drafts());
  std::optional<FastPrefillBatchMetadata> fast_prefill;
  if (rig_.fast_prefill) {
    const bool staged = succeeds([&] {
      fast_prefill = rig_.fast_prefill->prepare(b.logits_indices(), b.num_reqs(), b.cu_num_logits(),
                                                b.has_prefill(), descriptor_, num_active_loras_);
    });
    check(staged || !engine_step, "fast prefill refused an engine step", b.num_tokens());
  }
  if (fast_prefill) {
    const auto& rows = fast_prefill->logits_indices_padded;
    check(rows.size() >= static_cast<std::size_t>(fast_prefill->num_logits_indices) &&
              rows.size() <= static_cast<std::size_t>(max_tokens_),
          "fast-prefill rows", static_cast<long long>(rows.size()));
    for (const std::int32_t row : rows) {
      check(row >= 0 && row < b.num_tokens_padded(), "fast-prefill row index", row);
    }
  }
  AttentionMetadataInputs inputs = make_attention_metadata_inputs(b, rig_.tables);
  inputs.fast_prefill = fast_prefill ? &*fast_prefill : nullptr;
  const bool built =
      succeeds([&] { build_attn_metadata(rig_.plan.backends.attn_groups, inputs, rig_.metadata); });
  check(built || !engine_step || descriptor_.cg_mode == CUDAGraphMode::FULL,
        "build_attn_metadata refused an engine step", b.num_tokens());
  for (const ScheduledRequest& r : prepared_) {
    slots_[static_cast<std::size_t>(r.req_index)].computed =
        r.num_computed_tokens + r.num_scheduled_tokens;
  }
}

void StepOps::check_tables() const {
  for (int s = 0; s < max_reqs_; ++s) {
    for (int g = 0; g < num_groups_; ++g) {
      const KernelBlockGeometry& geo = rig_.tables.geometry(g);
      const std::vector<std::int32_t>& ids = slots_[static_cast<std::size_t>(s)].ids[g];
      const std::span<const std::int32_t> row = rig_.tables.row(g, s);
      check(row.size() == ids.size() * static_cast<std::size_t>(geo.ratio), "row length", s);
      for (std::size_t k = 0; k < row.size(); ++k) {
        check(row[k] == geo.kernel_block_id(ids[k / geo.ratio], static_cast<int>(k % geo.ratio)),
              "row block id", s);
      }
    }
  }
}

}  // namespace attnrt::fuzz
