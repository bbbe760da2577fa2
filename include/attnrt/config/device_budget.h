#pragma once
// The KV cache budget of a whole device, as vLLM arrives at it: device memory × utilization, less
// the weights (counted from the config, per rank) and a reserve for activations and CUDA graphs
// (what vLLM measures by profiling a forward pass; attnrt cannot, so it is a stated amount).

#include <cstdint>

#include "attnrt/config/hf_weights.h"
#include "attnrt/core/export.h"

namespace attnrt {

// The default reserve: activations of a max_num_batched_tokens forward pass and captured graphs
// of a 7–14B model take 1–3 GiB in vLLM's profiles; 2 GiB is the middle of that range.
inline constexpr std::uint64_t kDefaultActivationReserve = std::uint64_t{2} << 30;

struct DeviceBudgetRequest {
  std::uint64_t device_memory = 0;      // bytes of one device
  double gpu_memory_utilization = 0.9;  // vLLM's default
  std::uint64_t reserve = kDefaultActivationReserve;
};

struct DeviceBudget {
  DeviceBudgetRequest request;
  std::uint64_t usable_bytes = 0;  // device × utilization
  WeightBreakdown weights;         // per rank
  std::uint64_t kv_cache_bytes = 0;
};

// Throws an Error naming `--gpu-memory-utilization` for a fraction outside (0, 1], and vLLM's "No
// available memory for the cache blocks" with the breakdown when the weights and the reserve
// leave nothing.
ATTNRT_API DeviceBudget device_kv_budget(const DeviceBudgetRequest& request,
                                         WeightBreakdown weights);

}  // namespace attnrt
