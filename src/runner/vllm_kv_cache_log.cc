#include "attnrt/runner/vllm_kv_cache_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnrt {

VllmKvCacheLog vllm_kv_cache_log(const KVCachePlan& plan, const EngineConfig& config) {
  const KVCacheConfig& kv = plan.kv_cache_config;
  VllmKvCacheLog log;
  log.available_bytes = plan.capacity.available_bytes;
  log.max_model_len = config.model.max_model_len;
  log.max_concurrency = max_concurrency(kv, config);
  log.kv_cache_tokens =
      static_cast<std::int64_t>(log.max_concurrency * static_cast<double>(log.max_model_len));
  if (!kv.kv_cache_groups.empty()) {
    const auto groups = static_cast<std::int64_t>(kv.kv_cache_groups.size());
    const std::int64_t smallest_block =
        tokens_capacity(kv) / std::max<std::int64_t>(kv.num_blocks, 1);
    log.kv_cache_tokens_v0_19 = kv.num_blocks / groups * smallest_block;
  }
  return log;
}

std::string format_gib_as_vllm(std::uint64_t bytes) {
  const double gib =
      std::round(static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0) * 100) / 100;
  std::string text = fmt::format("{}", gib);  // the shortest text that reads back, as Python's
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string thousands(std::int64_t value) {
  std::uint64_t magnitude =
      value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  std::string reversed;  // digits from the last, a comma before every third
  for (int digit = 0; digit == 0 || magnitude > 0; ++digit, magnitude /= 10) {
    if (digit > 0 && digit % 3 == 0) reversed.push_back(',');
    reversed.push_back(static_cast<char>('0' + magnitude % 10));
  }
  if (value < 0) reversed.push_back('-');
  return {reversed.rbegin(), reversed.rend()};
}

std::vector<std::string> vllm_kv_cache_log_lines(const VllmKvCacheLog& log) {
  return {fmt::format("Available KV cache memory: {} GiB", format_gib_as_vllm(log.available_bytes)),
          fmt::format(
              "GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: "
              "{:.2f}x",
              thousands(log.kv_cache_tokens), thousands(log.max_model_len), log.max_concurrency)};
}

}  // namespace attnrt
