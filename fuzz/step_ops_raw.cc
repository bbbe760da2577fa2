// The raw operations of fuzz_step_inputs (step_ops.h): BlockTables, InputBatch::pad_to and
// CudaGraphManager calls with arguments straight from the bytes, as a buggy or hostile caller
// would pass them. They must either throw attnrt::Error or return something sane; memory errors
// are for ASan to see.

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "attnrt/core/error.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "step_ops.h"

namespace attnrt::fuzz {
namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

bool threw_error(const auto& call) {
  try {
    call();
    return false;
  } catch (const Error&) {
    return true;
  }
}

}  // namespace

void StepOps::gather_raw() {
  std::vector<std::int32_t> idx_mapping(static_cast<std::size_t>(in_.below(max_reqs_ + 2)));
  bool ok = true;
  for (std::int32_t& slot : idx_mapping) {
    slot = pick_slot();
    ok = ok && slot >= 0 && slot < max_reqs_;
  }
  const int num_reqs_padded = in_.byte() < 224 ? static_cast<int>(idx_mapping.size()) + in_.below(3)
                                               : in_.count(max_reqs_ + 2);
  ok =
      ok && num_reqs_padded >= static_cast<int>(idx_mapping.size()) && num_reqs_padded <= max_reqs_;
  const bool threw =
      threw_error([&] { rig_.tables.gather_block_tables(idx_mapping, num_reqs_padded); });
  check(threw != ok,
        ok ? "gather_block_tables rejected a valid gather"
           : "gather_block_tables accepted a bad gather",
        num_reqs_padded);
  if (!threw) check_gathered(idx_mapping, num_reqs_padded);
}

// A descriptor from the bytes: pad_to either refuses it, unchanged, or pads within the buffers.
void StepOps::pad_raw() {
  BatchExecutionDescriptor d;
  d.cg_mode = CUDAGraphMode::valid_runtime_modes()[static_cast<std::size_t>(in_.below(3))];
  d.num_tokens = in_.count(80);
  if (in_.flag()) d.num_reqs = in_.count(12);
  if (in_.flag()) d.uniform_token_count = in_.count(4);
  if (in_.flag()) d.max_query_len = in_.count(20);
  d.num_active_loras = in_.count(3);
  d.exact_num_tokens = in_.flag();
  d.num_ubatches = in_.byte() < 240 ? 1 : in_.count(3);
  const int loras = in_.byte() < 224 ? 0 : in_.count(3);
  const int ubatches = in_.byte() < 240 ? 1 : in_.count(3);
  const InputBatch& b = rig_.batch;
  const BatchSnapshot before = BatchSnapshot::of(b);
  const bool done = !threw_error([&] { rig_.batch.pad_to(d, loras, ubatches); });
  dispatched_ = false;
  num_active_loras_ = loras;
  descriptor_ = done ? d : BatchExecutionDescriptor::eager(b.num_reqs(), b.num_tokens());
  if (!done) {
    check(BatchSnapshot::of(b) == before, "pad_to changed the batch, then threw");
    return;
  }
  check(b.num_tokens() <= b.num_tokens_padded() && b.num_tokens_padded() <= max_tokens_,
        "padded token count", b.num_tokens_padded());
  check(b.num_reqs() <= b.num_reqs_padded() && b.num_reqs_padded() <= max_reqs_,
        "padded request count", b.num_reqs_padded());
  for (int t = 0; t < b.num_tokens_padded(); ++t) {
    check(b.is_padding()[static_cast<std::size_t>(t)] == (t >= b.num_tokens() ? 1 : 0),
          "is_padding", t);
  }
}

// Spans as a caller might hand them over: query_start_loc mostly ascending from 0 but sometimes
// not, positions mostly small, padding flags sometimes absent.
void StepOps::slot_mappings_raw() {
  std::vector<std::int32_t> idx_mapping(static_cast<std::size_t>(in_.below(max_reqs_ + 1)));
  for (std::int32_t& slot : idx_mapping) slot = pick_slot();
  const std::size_t short_by = in_.byte() < 240 ? 0 : 1;
  std::vector<std::int32_t> query_start_loc(idx_mapping.size() + 1 - short_by);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < query_start_loc.size(); ++i) {
    const std::uint8_t kind = in_.byte();
    if (i == 0 && kind < 240) {
      at = 0;
    } else if (kind < 224) {
      at = std::min(at + in_.below(9), kMaxInt32);
    } else {
      at = in_.count(64);
    }
    query_start_loc[i] = static_cast<std::int32_t>(at);
  }
  std::vector<std::int64_t> positions(static_cast<std::size_t>(in_.below(max_tokens_ + 1)));
  for (std::int64_t& position : positions) {
    position = in_.byte() < 224 ? in_.below(300) : in_.int32();
  }
  const int num_tokens_padded = in_.count(max_tokens_ + 2);
  std::vector<std::uint8_t> is_padding(
      static_cast<std::size_t>(in_.flag() ? 0 : in_.below(max_tokens_ + 1)));
  for (std::uint8_t& flag : is_padding) flag = in_.byte() < 200 ? 0 : 1;

  // What compute_slot_mappings documents it checks (block_tables.cc); it must refuse the rest.
  const std::size_t n = idx_mapping.size();
  bool documented = query_start_loc.size() >= n + 1 && query_start_loc[0] == 0;
  if (documented) {
    const std::int32_t num_tokens = query_start_loc[n];
    documented = num_tokens >= 0 && num_tokens <= num_tokens_padded &&
                 num_tokens_padded <= max_tokens_ &&
                 positions.size() >= static_cast<std::size_t>(num_tokens) &&
                 (is_padding.empty() || is_padding.size() >= static_cast<std::size_t>(num_tokens));
  }
  for (const std::int32_t slot : idx_mapping)
    documented = documented && slot >= 0 && slot < max_reqs_;
  const bool threw = threw_error([&] {
    rig_.tables.compute_slot_mappings(idx_mapping, query_start_loc, positions, num_tokens_padded,
                                      is_padding);
  });
  check(threw || documented, "compute_slot_mappings accepted arguments its checks refuse");
  if (threw) return;
  for (int g = 0; g < num_groups_; ++g) {
    const std::span<const std::int64_t> slots = rig_.tables.slot_mapping(g);
    check(slots.size() == static_cast<std::size_t>(num_tokens_padded), "raw slot mapping size",
          static_cast<long long>(slots.size()));
    const std::int64_t end = num_blocks_ * rig_.tables.geometry(g).manager_block_size;
    for (const std::int64_t slot : slots) {
      check(slot == PAD_SLOT_ID || (slot >= 0 && slot < end), "raw slot outside the cache", slot);
    }
  }
}

// Manager options from the bytes, then capture descriptors and dispatch: whatever graph dispatch
// picks must be able to serve the batch (is_compatible).
void StepOps::graph_manager_raw() {
  CudaGraphManagerOptions options;
  options.mode = CUDAGraphMode::all()[static_cast<std::size_t>(in_.below(5))];
  options.capture_sizes.resize(static_cast<std::size_t>(in_.below(6)));
  for (int& size : options.capture_sizes) size = in_.count(80);
  if (in_.flag()) options.max_capture_size = in_.count(80);
  options.max_num_reqs = in_.count(10);
  options.decode_query_len = in_.count(5);
  options.lora_capture_cases.resize(static_cast<std::size_t>(in_.below(3)));
  for (int& loras : options.lora_capture_cases) loras = in_.count(4);
  options.varlen_decode = in_.flag();
  if (in_.flag()) {
    std::set<int> sizes;
    for (int k = in_.below(3); k > 0; --k) sizes.insert(in_.count(10));
    options.full_capture_request_sizes = sizes;
  }
  options.specialize_full_decode = in_.flag();
  options.single_request_prefill_tokens = in_.count(64);
  options.breakable_cudagraphs = in_.flag();

  std::optional<CudaGraphManager> manager;
  if (threw_error([&] { manager.emplace(options); })) return;
  const std::vector<BatchExecutionDescriptor> captured = manager->capture_descriptors();
  for (const BatchExecutionDescriptor& d : captured) {
    check(d.cg_mode == CUDAGraphMode::FULL || d.cg_mode == CUDAGraphMode::PIECEWISE,
          "capture descriptor mode", d.num_tokens);
    check(d.num_tokens > 0, "capture descriptor size", d.num_tokens);
  }
  if (in_.flag()) manager->mark_captured();
  for (int k = 0; k < 4; ++k) {
    RuntimeBatch batch;
    batch.num_reqs = in_.count(10);
    batch.num_tokens = in_.count(100);
    if (in_.flag()) batch.uniform_token_count = in_.count(5);
    batch.num_active_loras = in_.count(3);
    if (in_.flag()) batch.max_query_len = in_.count(20);
    BatchExecutionDescriptor d;
    if (threw_error([&] {
          d = manager->dispatch(batch.num_reqs, batch.num_tokens, batch.uniform_token_count,
                                batch.num_active_loras, batch.max_query_len);
        })) {
      continue;
    }
    if (d.cg_mode != CUDAGraphMode::NONE) {
      batch.num_active_loras = manager->lora_case(batch.num_active_loras);  // as dispatch maps it
      check(is_compatible(d, batch), "dispatch chose a graph that cannot serve the batch",
            d.num_tokens);
    }
  }
}

}  // namespace attnrt::fuzz
