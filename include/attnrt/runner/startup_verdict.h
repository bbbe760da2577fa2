#pragma once
// Would vLLM start with this plan? Every start-up refusal vLLM raises after it has planned the KV
// cache, as a value: `attnrt plan` prints the whole plan and then the verdict, where vLLM would
// stop at the first. An engine (and `attnrt run`) refuses to start on the first reason.

#include <string>
#include <vector>

#include "attnrt/core/export.h"

namespace attnrt {

struct StartupVerdict {
  // vLLM's messages, in the order vLLM checks them: one request of max_model_len must fit the KV
  // cache memory (check_enough_kv_cache_memory), then FULL CUDA graphs need a Mamba block per
  // sequence (capture).
  std::vector<std::string> reasons;

  bool starts() const { return reasons.empty(); }
};

// Throws Error with the first reason when vLLM would refuse to start.
ATTNRT_API void require_startup(const StartupVerdict& verdict);

}  // namespace attnrt
