// vLLM's start-up capacity check: the bytes one max_model_len request needs, the longest length a
// budget holds, and the text vLLM refuses to start with.

#include "attnrt/kv/kv_cache_capacity.h"

#include <fmt/format.h>

#include "attnrt/core/checked_math.h"

namespace attnrt {
namespace {

constexpr std::string_view kSumWhat = "KV cache bytes per request, summed over layers";

// The config the search varies. KVCacheSpec::max_memory_usage_bytes reads the model's lengths and
// the scheduler, never the layers, so the probe drops them: one copy per check, none per probe.
EngineConfig without_layers(EngineConfig config) {
  config.model.layers.clear();
  return config;
}

bool fits_at(const LayerSpecs& specs, EngineConfig& probe, std::int64_t max_model_len,
             std::uint64_t available_memory) {
  probe.model.max_model_len = static_cast<int>(max_model_len);  // within [1, an int] by the search
  // The sum is never negative: every spec's bound is a count of blocks times a page.
  return static_cast<std::uint64_t>(max_memory_usage_bytes(specs, probe)) <= available_memory;
}

}  // namespace

std::int64_t max_memory_usage_bytes(const LayerSpecs& specs, const EngineConfig& config) {
  std::int64_t total = 0;
  for (const auto& layer : specs) {
    const auto bytes = static_cast<std::uint64_t>(layer.second.max_memory_usage_bytes(config));
    // Both terms are below 2^63, so the add itself cannot wrap; the cast refuses past int64.
    total = checked_cast<std::int64_t>(
        checked_add(static_cast<std::uint64_t>(total), bytes, kSumWhat), kSumWhat);
  }
  return total;
}

// The need grows with the length for every spec kind (or stays flat: cross, encoder-only), so the
// lengths that fit are a prefix of [1, max_model_len] and a binary search finds its end.
int estimate_max_model_len(const LayerSpecs& specs, const EngineConfig& config,
                           std::uint64_t available_memory) {
  EngineConfig probe = without_layers(config);
  if (!fits_at(specs, probe, 1, available_memory)) return 0;
  std::int64_t best = 1;  // fits
  std::int64_t low = 1;
  std::int64_t high = config.model.max_model_len;  // 64 bits: low + high may pass an int
  while (low <= high) {
    const std::int64_t mid = low + (high - low) / 2;
    if (fits_at(specs, probe, mid, available_memory)) {
      best = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return static_cast<int>(best);
}

KVCacheCapacity check_kv_cache_capacity(const LayerSpecs& specs, const EngineConfig& config,
                                        std::uint64_t available_memory) {
  KVCacheCapacity capacity;
  capacity.max_model_len = config.model.max_model_len;
  capacity.available_bytes = available_memory;
  if (specs.empty()) {  // an attention-free model holds nothing: vLLM skips the check
    capacity.fits = true;
    capacity.estimated_max_model_len = capacity.max_model_len;
    return capacity;
  }
  if (available_memory == 0) return capacity;  // vLLM refuses before it sums the need
  capacity.needed_bytes = max_memory_usage_bytes(specs, config);
  capacity.fits = static_cast<std::uint64_t>(capacity.needed_bytes) <= available_memory;
  capacity.estimated_max_model_len = capacity.fits
                                         ? capacity.max_model_len
                                         : estimate_max_model_len(specs, config, available_memory);
  return capacity;
}

std::string KVCacheCapacity::message() const {
  if (fits) return "";
  if (available_bytes == 0) {
    return "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
           "when initializing the engine.";
  }
  std::string estimate;  // only when at least one token fits
  if (estimated_max_model_len > 0) {
    estimate =
        fmt::format("Based on the available memory, the estimated maximum model length is {}. ",
                    estimated_max_model_len);
  }
  return fmt::format(
      "To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is "
      "needed, which is larger than the available KV cache memory ({} GiB). {}Try increasing "
      "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
      max_model_len, format_gib(static_cast<std::uint64_t>(needed_bytes)),
      format_gib(available_bytes), estimate);
}

std::string format_gib(std::uint64_t bytes) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  return fmt::format("{:.2f}", static_cast<double>(bytes) / kGiB);
}

}  // namespace attnrt
