#pragma once
// The lines vLLM logs at start-up about the KV cache, computed as the newest vLLM computes them,
// so that `attnrt plan` can be diffed with a real log (docs/hf-import.md, "vLLM's log lines").

#include <cstdint>
#include <string>
#include <vector>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt {

struct VllmKvCacheLog {
  std::uint64_t available_bytes = 0;  // "Available KV cache memory": the KV budget per rank
  int max_model_len = 0;
  double max_concurrency = 0;  // num_blocks / the blocks one request is charged, summed over groups
  // "GPU KV cache size" since vLLM ~0.20 (update_kv_cache_capacity): int(max_concurrency ×
  // max_model_len), one figure for the whole pool, hybrids included.
  std::int64_t kv_cache_tokens = 0;
  // The rule up to v0.19 (_report_kv_cache_config): num_blocks // groups × the smallest attention
  // block size; a hybrid's state groups divide it.
  std::int64_t kv_cache_tokens_v0_19 = 0;
};

ATTNRT_API VllmKvCacheLog vllm_kv_cache_log(const KVCachePlan& plan, const EngineConfig& config);

// vLLM's wording: "Available KV cache memory: 55.04 GiB", then the newest single line
// "GPU KV cache size: 450,896 tokens, Maximum concurrency for 131,072 tokens per request: 3.44x".
ATTNRT_API std::vector<std::string> vllm_kv_cache_log_lines(const VllmKvCacheLog& log);

// Bytes as vLLM's format_gib writes GiB: Python's str(round(gib, 2)) ("4.5", "55.04", "12.0").
ATTNRT_API std::string format_gib_as_vllm(std::uint64_t bytes);
// 450896 -> "450,896" (Python's f"{n:,}").
ATTNRT_API std::string thousands(std::int64_t value);

}  // namespace attnrt
