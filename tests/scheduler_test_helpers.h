#pragma once
// Builders shared by the scheduler's tests: small configs, specs, prompts, and one-step drivers.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <span>
#include <vector>

#include "attnrt/engine/scheduler.h"
#include "error_of.h"

namespace attnrt::scheduler_testing {

using attnrt::testing::error_of;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Ids = std::vector<BlockId>;

inline EngineConfig engine_config(int max_num_seqs, int max_num_batched_tokens,
                                  int max_model_len = 64) {
  EngineConfig config;
  config.scheduler.max_num_seqs = max_num_seqs;
  config.scheduler.max_num_batched_tokens = max_num_batched_tokens;
  config.model.max_model_len = max_model_len;
  return config;
}

inline KVCacheConfig kv_config(std::int64_t num_blocks, std::vector<KVCacheSpec> specs) {
  KVCacheConfig config;
  config.num_blocks = num_blocks;
  for (std::size_t g = 0; g < specs.size(); ++g) {
    config.kv_cache_groups.push_back({{"layer" + std::to_string(g)}, specs[g]});
  }
  return config;
}

inline KVCacheSpec full(int block_size) {
  return KVCacheSpec::full(block_size, 1, 8, DType::f32);
}
inline KVCacheSpec sliding(int block_size, int window) {
  return KVCacheSpec::sliding(block_size, 1, 8, DType::f32, window);
}

inline std::vector<std::int32_t> prompt(int length, int first = 100) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(length));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

inline Ids new_ids(const SchedulerOutput& output, int index, int group) {
  const auto ids = output.new_block_ids(index)[static_cast<std::size_t>(group)];
  return Ids(ids.begin(), ids.end());
}

inline std::vector<int> chunk_sizes(const SchedulerOutput& output) {
  std::vector<int> sizes;
  for (const SchedulerEntry& entry : output.scheduled) sizes.push_back(entry.num_scheduled_tokens);
  return sizes;
}

// Runs one step with sampled tokens `first`, `first + 1`, ...
inline std::span<const Request* const> step(Scheduler& scheduler, std::int32_t first = 1000) {
  const SchedulerOutput& output = scheduler.schedule();
  std::vector<std::int32_t> sampled(output.scheduled.size());
  std::iota(sampled.begin(), sampled.end(), first);
  return scheduler.update_from_output(sampled);
}

}  // namespace attnrt::scheduler_testing
