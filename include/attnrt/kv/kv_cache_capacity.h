#pragma once
// vLLM's "will it start" check (check_enough_kv_cache_memory): one request of max_model_len tokens
// must fit the KV cache budget, summed over every layer's own spec (before page-size unification;
// a KV-sharing layer has no spec of its own). When it does not fit, the check names the longest
// max_model_len that would (estimate_max_model_len) and the engine refuses to start.

#include <cstdint>
#include <string>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_planner.h"

namespace attnrt {

struct ATTNRT_API KVCacheCapacity {
  int max_model_len = 0;          // the length checked
  std::int64_t needed_bytes = 0;  // one request of max_model_len, summed over layers
  std::uint64_t available_bytes = 0;
  bool fits = false;
  int estimated_max_model_len = 0;  // == max_model_len when it fits; 0: not even one token
  std::string message() const;      // vLLM's refusal text when !fits; "" when fits
};

// Σ over `specs` of spec.max_memory_usage_bytes(config) (vLLM's max_memory_usage_bytes). Throws
// Error naming "KV cache bytes per request" when the sum passes int64.
ATTNRT_API std::int64_t max_memory_usage_bytes(const LayerSpecs& specs, const EngineConfig& config);

// vLLM's estimate_max_model_len: the largest length in [1, config.model.max_model_len] whose
// request fits `available_memory` bytes, found by binary search; 0 when one token does not fit.
ATTNRT_API int estimate_max_model_len(const LayerSpecs& specs, const EngineConfig& config,
                                      std::uint64_t available_memory);

// vLLM's check_enough_kv_cache_memory as a value, not a throw: empty specs always fit; no memory
// never fits (vLLM refuses before it sums the need, so needed_bytes stays 0).
ATTNRT_API KVCacheCapacity check_kv_cache_capacity(const LayerSpecs& specs,
                                                   const EngineConfig& config,
                                                   std::uint64_t available_memory);

// Bytes in GiB with two decimals, as the refusal prints them: format_gib(3 << 29) == "1.50".
ATTNRT_API std::string format_gib(std::uint64_t bytes);

}  // namespace attnrt
