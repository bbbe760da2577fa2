// The engine split across tensor-parallel ranks (threads standing in for processes): the same
// tokens as one rank with logits within rounding, the dense check on every rank, half the KV
// bytes per rank, and the start-up agreement that stops every rank with one line when one rank
// plans differently or fails.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/engine/engine.h"
#include "error_of.h"
#include "support/engine_workload.h"
#include "thread_communicator.h"
#include "tiny_model_rig.h"

namespace attnrt {
namespace {

using testing::error_of;
using testing::run_ranks;

EngineConfig config_for(int world, CUDAGraphMode mode = CUDAGraphMode::NONE) {
  EngineConfig config = tiny_model::yoco_config(DType::f32, /*fast_prefill=*/true);
  config.compilation.cudagraph_mode = mode;
  config.compilation.capture_sizes = {1, 2, 4, 8, 16, 32};
  config.cache.memory = 256 << 10;
  config.parallel.tensor_parallel_size = world;
  return config;
}

std::vector<WorkloadRequest> workload() {
  WorkloadOptions options;
  options.num_requests = 6;
  options.min_prompt_len = 3;
  options.max_prompt_len = 40;
  options.min_output_len = 2;
  options.max_output_len = 9;
  options.seed = 5;
  return make_workload(options, 64, 64);
}

EngineOptions options_for(Communicator* communicator) {
  EngineOptions options;
  options.backend = "CPU_REFERENCE";
  options.record_logits = true;
  options.seed = 11;
  options.communicator = communicator;
  return options;
}

struct RankRun {
  std::vector<RequestRecord> records;
  std::uint64_t kv_bytes = 0;
  DenseCheck check;
};

RankRun run_world(int world, CUDAGraphMode mode) {
  RankRun result;
  run_ranks(world, [&](Communicator& communicator) {
    Engine engine(config_for(world, mode), options_for(&communicator));
    if (communicator.rank() == 0) submit(engine, workload());
    engine.run();
    const DenseCheck check = check_against_dense(engine, 0);
    if (communicator.rank() == 0) {
      result.records.assign(engine.requests().begin(), engine.requests().end());
      result.kv_bytes = engine.plan().kv.kv_cache_config.backing_bytes();
      result.check = check;
    }
  });
  return result;
}

class TensorParallelEngineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorParallelEngineTest, RanksGenerateTheOneRankTokens) {
  const CUDAGraphMode mode = CUDAGraphMode::parse(GetParam());
  const RankRun one = run_world(1, mode);
  ASSERT_EQ(one.records.size(), workload().size());
  for (const int world : {2, 4}) {
    const RankRun split = run_world(world, mode);
    ASSERT_EQ(split.records.size(), one.records.size()) << "world " << world;
    double worst = 0;
    for (std::size_t r = 0; r < one.records.size(); ++r) {
      EXPECT_EQ(split.records[r].output, one.records[r].output)
          << "world " << world << ", request " << r;
      const std::vector<float>& a = one.records[r].logits;
      const std::vector<float>& b = split.records[r].logits;
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
      }
    }
    // Only the order of the sums differs: the split projections add per-rank partial sums.
    EXPECT_LT(worst, 1e-4) << "world " << world;
    EXPECT_EQ(split.check.tokens_agree, split.check.tokens_total) << "world " << world;
    EXPECT_GT(split.check.tokens_total, 0);
    EXPECT_LT(split.check.max_abs_logit_diff, 1e-4) << "world " << world;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, TensorParallelEngineTest,
                         ::testing::Values("NONE", "FULL_AND_PIECEWISE"));

// Two KV heads: two ranks hold one each, so the same blocks take half the bytes per rank; four
// ranks replicate them (a quarter of the query heads, but still one KV head per rank).
TEST(TensorParallelEngine, KvBytesPerRankFollowTheKvHeads) {
  std::vector<std::uint64_t> bytes;
  for (const int world : {1, 2, 4}) {
    run_ranks(world, [&](Communicator& c) {
      EngineConfig config = config_for(world);
      config.cache.num_gpu_blocks_override = 40;
      Engine engine(config, options_for(&c));
      if (c.rank() == 0) bytes.push_back(engine.plan().kv.kv_cache_config.backing_bytes());
    });
  }
  ASSERT_EQ(bytes.size(), 3u);
  EXPECT_EQ(bytes[1] * 2, bytes[0]);
  EXPECT_EQ(bytes[2], bytes[1]);
}

TEST(TensorParallelEngine, RanksThatPlanDifferentCachesAllStop) {
  std::vector<std::string> errors;
  run_ranks(
      2,
      [&](Communicator& c) {
        EngineConfig config = config_for(2);
        if (c.rank() == 1) config.cache.block_size = 2 * config.cache.block_size;
        Engine engine(config, options_for(&c));
      },
      &errors);
  ASSERT_EQ(errors.size(), 2u);
  for (const std::string& error : errors) {
    EXPECT_NE(error.find("rank 1's KV cache groups differ from rank 0's"), std::string::npos)
        << error;
  }
}

TEST(TensorParallelEngine, ARankThatFailsToPlanStopsTheOthers) {
  std::vector<std::string> errors;
  run_ranks(
      2,
      [&](Communicator& c) {
        EngineOptions options = options_for(&c);
        if (c.rank() == 1) options.backend = "NO_SUCH_BACKEND";
        Engine engine(config_for(2), options);
      },
      &errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[1].find("NO_SUCH_BACKEND"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("rank 1 failed to plan attention"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("NO_SUCH_BACKEND"), std::string::npos) << errors[0];
}

TEST(TensorParallelEngine, OnlyRankZeroTakesRequests) {
  run_ranks(2, [&](Communicator& c) {
    Engine engine(config_for(2), options_for(&c));
    if (c.rank() == 1) {
      const std::vector<std::int32_t> prompt{1, 2, 3};
      EXPECT_NE(error_of([&] { engine.add_request(prompt, 2); }).find("add requests on rank 0"),
                std::string::npos);
    }
    engine.run();
  });
}

// Every rank multiplies bf16 caches the way rank 0 chose (ranks on other machines could differ).
TEST(TensorParallelEngine, RanksUseRankZerosBf16Products) {
  std::vector<int> dot(2, -1);
  std::vector<int> prefill(2, -1);
  run_ranks(2, [&](Communicator& c) {
    EngineConfig config = config_for(2);
    config.cache.dtype = DType::bf16;
    EngineOptions options = options_for(&c);
    options.backend = "CPU_FLASH";
    Engine engine(config, options);
    const CpuFlashBackend* flash = cpu_flash_backend_of(engine.plan());
    ASSERT_NE(flash, nullptr);
    dot[static_cast<std::size_t>(c.rank())] = flash->bf16_products().dot_products ? 1 : 0;
    prefill[static_cast<std::size_t>(c.rank())] = flash->bf16_products().prefill_bf16 ? 1 : 0;
    if (c.rank() == 1) {
      EXPECT_EQ(flash->bf16_products().reason.find("(auto: "), std::string::npos)
          << flash->bf16_products().reason;
    }
  });
  EXPECT_EQ(dot[0], dot[1]);
  EXPECT_EQ(prefill[0], prefill[1]);
}

TEST(TensorParallelEngine, WorldMustMatchTheConfig) {
  run_ranks(2, [&](Communicator& c) {
    EXPECT_NE(error_of([&] {
                Engine engine(config_for(1), options_for(&c));
              }).find("parallel.tensor_parallel_size is 1"),
              std::string::npos);
  });
}

}  // namespace
}  // namespace attnrt
