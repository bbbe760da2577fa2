#pragma once
// Cutting one forward call into work items (SEMANTICS §0: from the device arrays only, so a FULL
// graph replay plans exactly what an eager call does). A request whose rows per KV head are few
// (decode) takes the GEMV path; others are tiled into GEMM items of about kTargetRows rows. When
// the batch has fewer items than the threads need, long requests are split along their keys and
// the splits merged afterwards (log-sum-exp weights).

#include <cstdint>
#include <span>

#include "attnrt/attention/attention_backend.h"
#include "flash_types.h"

namespace attnrt::cpu_flash {

// Built for each call from CpuFlashOptions, where the defaults live.
struct PlanPolicy {
  int num_threads = 1;
  int min_split_keys = 0;
  int max_splits = 1;
  std::int64_t partial_floats = 0;  // room for split partials
};

struct PlanTotals {
  int num_items = 0;
  int num_merges = 0;
  std::int64_t partial_floats = 0;
};

// Request extents from the device arrays (cross: encoder lengths when given, else seq_lens).
void read_requests(const CommonAttentionMetadata& common, const AttentionShape& shape,
                   std::span<Request> requests);

// Fills one plan per request; partial offsets are in floats from the start of the partial area.
PlanTotals plan_batch(std::span<const Request> requests, const AttentionShape& shape,
                      const PlanPolicy& policy, std::span<RequestPlan> plans);

// Item `index` of the batch (0 ≤ index < num_items).
Item decode_item(const ForwardTask& task, int index);
// The split-0 item of merge `index` (its partial points at the first split's slot).
Item decode_merge(const ForwardTask& task, int index);
// Floats between the slots of consecutive splits of one item.
std::int64_t partial_slot_floats(const RequestPlan& plan, int value_size);

}  // namespace attnrt::cpu_flash
