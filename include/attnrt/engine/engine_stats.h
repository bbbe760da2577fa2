#pragma once
// EngineStats: what the step loop counts — steps by CUDA-graph runtime mode, tokens by phase and
// the time they took, graph padding, the rows the fast-prefill layers skipped and an estimate of
// the time that saved, KV cache blocks at their peak, preemptions.

#include <array>
#include <cstdint>

#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct ATTNRT_API EngineStats {
  std::int64_t steps = 0;
  std::array<std::int64_t, 3> steps_by_mode{};  // indexed by runtime_mode_index
  std::int64_t prefill_tokens = 0;              // tokens of prefill chunks (recomputation included)
  std::int64_t decode_tokens = 0;
  std::int64_t padded_tokens = 0;    // rows added to reach a captured graph's token count
  std::int64_t padded_requests = 0;  // requests added to reach a FULL graph's request count
  // A step's time is split between prefill and decode by their share of its tokens.
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double forward_seconds = 0;  // inside the model's forward only
  std::int64_t fast_prefill_steps = 0;
  // Token rows each fast-prefill layer did not run (the step's rows minus the padded logits rows).
  std::int64_t fast_prefill_rows_skipped = 0;
  // Estimate: each fast-prefill step's measured forward time times the skipped share of the layer
  // work it would have done (engine_work.h's count of multiply-adds).
  double fast_prefill_seconds_saved = 0;
  // Layer work of fast-prefill steps, in multiply-adds: done, and skipped by the fast-prefill
  // layers. skipped / (done + skipped) is the share f that bounds the speed-up at 1 / (1 - f).
  double fast_prefill_work_done = 0;
  double fast_prefill_work_skipped = 0;
  int peak_kv_blocks = 0;  // manager blocks in use (the null block excluded)
  std::int64_t preemptions = 0;

  std::int64_t steps_in(CUDAGraphMode runtime_mode) const {
    return steps_by_mode[runtime_mode_index(runtime_mode)];
  }
  // NONE 0, PIECEWISE 1, FULL 2 (vLLM's values). Throws Error for a pair of modes.
  static int runtime_mode_index(CUDAGraphMode runtime_mode);
  // padded rows / real rows of every step.
  double padding_overhead() const;
  // 1 / (1 - f) for the fast-prefill steps so far; 1 when there were none.
  double fast_prefill_theoretical_speedup() const;
};

}  // namespace attnrt
