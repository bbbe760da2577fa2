// EngineStats: the derived figures of the counts.

#include "attnrt/engine/engine_stats.h"

#include "core/fail.h"

namespace attnrt {

int EngineStats::runtime_mode_index(CUDAGraphMode runtime_mode) {
  if (runtime_mode == CUDAGraphMode::NONE) return 0;
  if (runtime_mode == CUDAGraphMode::PIECEWISE) return 1;
  if (runtime_mode == CUDAGraphMode::FULL) return 2;
  fail("EngineStats: {} is not a runtime mode (NONE, PIECEWISE or FULL)", runtime_mode.name());
}

double EngineStats::padding_overhead() const {
  const std::int64_t real = prefill_tokens + decode_tokens;
  return real == 0 ? 0.0 : static_cast<double>(padded_tokens) / static_cast<double>(real);
}

double EngineStats::fast_prefill_theoretical_speedup() const {
  if (fast_prefill_work_done <= 0) return 1.0;
  return (fast_prefill_work_done + fast_prefill_work_skipped) / fast_prefill_work_done;
}

}  // namespace attnrt
