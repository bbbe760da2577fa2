// Blocks per request of state layers and vLLM's max_num_seqs check (SEMANTICS §4.4).

#include "attnrt/kv/state_blocks.h"

#include <fmt/format.h>

#include "core/fail.h"

namespace attnrt {

std::int64_t state_blocks_per_request(StateCacheMode mode, int num_speculative_tokens) {
  if (num_speculative_tokens < 0) {
    fail("speculative.num_speculative_tokens: must not be negative (got {})",
         num_speculative_tokens);
  }
  const std::int64_t base = mode == StateCacheMode::align ? 2 : 1;
  return base + num_speculative_tokens;
}

std::optional<std::string> state_blocks_refusal(int max_num_seqs, std::int64_t num_blocks) {
  if (max_num_seqs <= num_blocks) return std::nullopt;
  return fmt::format(
      "max_num_seqs ({}) exceeds available Mamba cache blocks ({}). Each decode sequence requires "
      "one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to "
      "at most {} or increase gpu_memory_utilization.",
      max_num_seqs, num_blocks, num_blocks);
}

void check_max_num_seqs_fits_state_blocks(int max_num_seqs, std::int64_t num_blocks) {
  if (std::optional<std::string> refusal = state_blocks_refusal(max_num_seqs, num_blocks)) {
    fail("{}", *refusal);
  }
}

}  // namespace attnrt
