// Tensor-parallel planning per rank (runner/tensor_parallel.h) on every example config at 1, 2,
// 4, 8 and 16 ranks: the ranks' head ranges cover the model's heads as vLLM splits them, every
// rank plans the same KV cache groups and CUDA-graph mode, and the agreement rule takes the
// smallest block count or names the rank that differs.

#include "attnrt/runner/tensor_parallel.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

const std::vector<std::string> kExamples = {"tiny-yoco.json",        "llama-3-8b.json",
                                            "mistral-7b.json",       "gemma-2-9b.json",
                                            "gemma-3n-e2b.json",     "gemma-3n-e2b-no-sharing.json",
                                            "deepseek-v2-lite.json", "whisper-small-decoder.json",
                                            "hybrid-mamba2.json",    "draft-flashinfer.json"};
const std::vector<int> kWorlds = {1, 2, 4, 8, 16};

EngineConfig example(const std::string& name) {
  return load_config_file(std::string(ATTNRT_SOURCE_DIR) + "/examples/" + name);
}

// Whether the example's heads divide among `world` ranks (else planning must say so).
bool divides(const EngineConfig& config, int world) {
  for (const LayerConfig& layer : config.model.layers) {
    if (layer.is_state_layer()) continue;
    if (layer.num_heads % world != 0) return false;
    if (layer.type == AttentionType::mla) continue;
    const bool split = layer.num_kv_heads >= world;
    if (split ? layer.num_kv_heads % world != 0 : world % layer.num_kv_heads != 0) return false;
  }
  return true;
}

// The ranks' query heads tile [0, H) in rank order; KV heads are split the same way, or each is
// held by world / num_kv_heads consecutive ranks, the ones whose query heads read it.
void expect_heads_cover_the_layer(const LayerConfig& layer, const std::vector<RankPlan>& ranks,
                                  std::size_t index) {
  const int world = static_cast<int>(ranks.size());
  int next_query = 0;
  for (const RankPlan& rank : ranks) {
    const RankHeadRange& heads = rank.heads.at(index);
    ASSERT_EQ(heads.layer, layer.name);
    EXPECT_EQ(heads.query_begin, next_query);
    EXPECT_EQ(heads.query_count, layer.num_heads / world);
    next_query += heads.query_count;
    if (layer.type == AttentionType::mla) {
      EXPECT_EQ(heads.kv_begin, 0);
      EXPECT_EQ(heads.kv_count, 1);
      EXPECT_EQ(heads.kv_replicated, world > 1);
      continue;
    }
    const int group = layer.num_heads / layer.num_kv_heads;  // query heads per KV head
    EXPECT_EQ(heads.kv_begin, heads.query_begin / group) << "rank " << rank.rank;
    if (layer.num_kv_heads >= world) {
      EXPECT_EQ(heads.kv_count, layer.num_kv_heads / world);
      EXPECT_FALSE(heads.kv_replicated);
    } else {
      EXPECT_EQ(heads.kv_count, 1);
      EXPECT_TRUE(heads.kv_replicated);
    }
  }
  EXPECT_EQ(next_query, layer.num_heads);
}

TEST(TensorParallelTest, EveryRankOfEveryExamplePlansItsShareAndTheSameCache) {
  int planned = 0;
  int refused = 0;
  for (const std::string& name : kExamples) {
    const EngineConfig config = example(name);
    const BackendRegistry registry = backend_registry_for(config);
    for (const int world : kWorlds) {
      SCOPED_TRACE(name + " at " + std::to_string(world) + " ranks");
      if (!divides(config, world)) {
        EXPECT_NE(error_of([&] {
                    plan_for_rank(config, 0, world, registry);
                  }).find("tensor-parallel ranks"),
                  std::string::npos);
        refused += 1;
        continue;
      }
      planned += 1;
      std::vector<RankPlan> ranks;
      for (int r = 0; r < world; ++r) ranks.push_back(plan_for_rank(config, r, world, registry));
      std::size_t index = 0;
      for (const LayerConfig& layer : config.model.layers) {
        if (layer.is_state_layer()) continue;
        expect_heads_cover_the_layer(layer, ranks, index++);
      }
      std::vector<KVCachePlan> kv;
      for (const RankPlan& rank : ranks) {
        kv.push_back(rank.plan.kv);
        EXPECT_EQ(rank.plan.cudagraph.mode, ranks.front().plan.cudagraph.mode);
        EXPECT_EQ(rank.plan.capture_sizes.sizes, ranks.front().plan.capture_sizes.sizes);
        EXPECT_EQ(summarize_kv_cache_plan(rank.plan.kv).groups,
                  summarize_kv_cache_plan(ranks.front().plan.kv).groups);
      }
      EXPECT_EQ(agree_kv_cache_plans(kv), ranks.front().plan.kv.kv_cache_config.num_blocks);
    }
  }
  std::printf("%d example x world plans, %d refused\n", planned, refused);
  EXPECT_GE(planned, 30);  // most examples run at 1-8 ranks
}

// With the same block count, a rank's page holds its share of the KV heads: half the bytes at 2
// ranks, as long as the KV heads split rather than replicate.
TEST(TensorParallelTest, ARankHoldsItsShareOfTheKVBytes) {
  EngineConfig config = example("llama-3-8b.json");  // 8 KV heads
  config.cache.num_gpu_blocks_override = 64;
  const BackendRegistry registry = backend_registry_for(config);
  const std::uint64_t one =
      plan_for_rank(config, 0, 1, registry).plan.kv.kv_cache_config.backing_bytes();
  for (const int world : {2, 4, 8}) {
    const RankPlan last = plan_for_rank(config, world - 1, world, registry);
    EXPECT_EQ(last.plan.kv.kv_cache_config.backing_bytes() * world, one) << world << " ranks";
  }
  const RankPlan replicated = plan_for_rank(config, 15, 16, registry);  // 8 KV heads, 16 ranks
  EXPECT_EQ(replicated.plan.kv.kv_cache_config.backing_bytes() * 8, one);
}

TEST(TensorParallelTest, RanksAgreeOnTheSmallestBlockCount) {
  const std::vector<KVCachePlanSummary> ranks = {{900, "g"}, {512, "g"}, {700, "g"}};
  EXPECT_EQ(agree_kv_cache_plans(ranks), 512);
}

TEST(TensorParallelTest, ARankWithOtherGroupsIsNamed) {
  const EngineConfig config = example("tiny-yoco.json");
  const BackendRegistry registry = backend_registry_for(config);
  EngineConfig other = config;
  other.cache.dtype = DType::f16;  // a bad config on one rank
  const std::vector<KVCachePlan> ranks = {plan_for_rank(config, 0, 2, registry).plan.kv,
                                          plan_for_rank(config, 1, 2, registry).plan.kv,
                                          plan_for_rank(other, 0, 2, registry).plan.kv};
  const std::string message = error_of([&] { agree_kv_cache_plans(ranks); });
  EXPECT_NE(message.find("rank 2's KV cache groups differ from rank 0's"), std::string::npos)
      << message;
  EXPECT_NE(
      error_of([] { agree_kv_cache_plans(std::span<const KVCachePlanSummary>{}); }).find("no rank"),
      std::string::npos);
}

TEST(TensorParallelTest, ARankOutsideTheWorldIsRejected) {
  const EngineConfig config = example("tiny-yoco.json");
  const BackendRegistry registry = backend_registry_for(config);
  EXPECT_NE(error_of([&] {
              plan_for_rank(config, 2, 2, registry);
            }).find("rank 2 is outside the world of 2 ranks"),
            std::string::npos);
  EXPECT_NE(error_of([&] { plan_for_rank(config, -1, 2, registry); }).find("rank -1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { plan_for_rank(config, 0, 0, registry); }).find("0 ranks"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
