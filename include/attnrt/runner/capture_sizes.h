#pragma once
// Which batch sizes get CUDA graphs (SEMANTICS §2.3) and which captured LoRA case serves a batch
// with a given number of active adapters (§2.4).

#include <span>
#include <vector>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct CaptureSizes {
  std::vector<int> sizes;    // token counts, ascending, distinct
  int max_capture_size = 0;  // the last size; 0 when graphs are off
};

// The user's `capture_sizes` (deduplicated, sizes above max_num_batched_tokens dropped, sorted),
// or the generated ladder [1, 2, 4, 8, 16, ..., 248, 256, 272, ...] up to the cap plus
// max_num_batched_tokens itself when it is the cap. Default cap: min(max_num_seqs ×
// uniform_decode_query_len × 2, 512), clamped to max_num_batched_tokens. Empty when the configured
// mode is NONE. Throws Error if an explicit max_capture_size is not the largest explicit size.
ATTNRT_API CaptureSizes compute_capture_sizes(const CompilationConfig& compilation,
                                              const SchedulerConfig& scheduler,
                                              int uniform_decode_query_len);
// The same with uniform_decode_query_len = 1 + num_speculative_tokens.
ATTNRT_API CaptureSizes compute_capture_sizes(const EngineConfig& config);

// Maps a batch's active-LoRA count onto a captured case: the smallest positive case at least as
// large, or the largest case when the count exceeds them all. Counts ≤ 0, and every count when
// no case is positive, pass through unchanged (and then usually run eagerly).
class ATTNRT_API LoRACaseMap {
 public:
  explicit LoRACaseMap(std::span<const int> capture_cases);

  int map(int num_active_loras) const;

 private:
  std::vector<int> positive_cases_;  // ascending, distinct
};

}  // namespace attnrt
