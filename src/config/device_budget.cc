#include "attnrt/config/device_budget.h"

#include <cmath>

#include "attnrt/config/config_loader.h"
#include "core/fail.h"

namespace attnrt {

DeviceBudget device_kv_budget(const DeviceBudgetRequest& request, WeightBreakdown weights) {
  const double fraction = request.gpu_memory_utilization;
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    fail("--gpu-memory-utilization: {} is outside (0, 1]", fraction);
  }
  if (request.device_memory == 0) fail("--device-memory: must be positive");
  DeviceBudget budget;
  budget.request = request;
  // Rounded down: vLLM's requested memory is int(total × utilization).
  budget.usable_bytes = static_cast<std::uint64_t>(
      std::floor(static_cast<long double>(request.device_memory) * fraction));
  budget.weights = std::move(weights);
  const std::uint64_t taken = budget.weights.total_bytes + request.reserve;
  if (taken >= budget.usable_bytes) {
    fail(
        "No available memory for the cache blocks: {} x {} = {} usable, but the weights take {} "
        "per rank and the reserve {}. Try increasing `gpu_memory_utilization`, a larger "
        "--tensor-parallel-size or a smaller --reserve",
        format_size(request.device_memory), fraction, format_size(budget.usable_bytes),
        format_size(budget.weights.total_bytes), format_size(request.reserve));
  }
  budget.kv_cache_bytes = budget.usable_bytes - taken;
  return budget;
}

}  // namespace attnrt
