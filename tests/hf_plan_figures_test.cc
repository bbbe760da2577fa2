// The capacity figures docs/hf-import.md publishes for real configs, pinned: blocks, tokens, max
// concurrency, whether one max-length request fits, and the estimated max model length, as
// `attnrt plan CONFIG ARGS` computes them. Each was checked by hand (the comments).

#include <gtest/gtest.h>

#include <cmath>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/config/model_source.h"
#include "attnrt/runner/attention_plan.h"

namespace attnrt {
namespace {

struct Figures {
  std::string file;
  EngineArgs args;
  std::int64_t num_blocks;
  std::int64_t tokens;
  double max_concurrency;
  bool fits;
  int estimated_max_model_len;
};

EngineArgs args(std::optional<int> max_model_len, std::optional<int> tp, std::uint64_t memory) {
  EngineArgs a;
  a.max_model_len = max_model_len;
  a.tensor_parallel_size = tp;
  a.memory = memory;
  return a;
}

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

class HfPlanFiguresTest : public testing::TestWithParam<Figures> {};

TEST_P(HfPlanFiguresTest, PlanMatchesThePublishedFigures) {
  const Figures& f = GetParam();
  const LoadedModel model =
      load_model(std::string(ATTNRT_SOURCE_DIR) + "/tests/data/hf/" + f.file, f.args);
  const AttentionPlan plan = plan_attention(model.config, backend_registry_for(model.config));
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  EXPECT_EQ(kv.num_blocks, f.num_blocks);
  EXPECT_EQ(tokens_capacity(kv), f.tokens);
  EXPECT_NEAR(max_concurrency(kv, model.config), f.max_concurrency, 0.005);
  EXPECT_EQ(plan.kv.capacity.fits, f.fits);
  EXPECT_EQ(plan.kv.capacity.estimated_max_model_len, f.estimated_max_model_len);
}

INSTANTIATE_TEST_SUITE_P(
    RealConfigs, HfPlanFiguresTest,
    testing::Values(
        // 32 layers x 64 KiB pages = 2 MiB a block; 8192 blocks per 131072-token request.
        Figures{"llama-3.1-8b-instruct.json", args({}, {}, 24 * GiB), 12288, 196608, 1.5, true,
                131072},
        // One request needs 16 GiB: vLLM refuses and estimates 65536 tokens.
        Figures{"llama-3.1-8b-instruct.json", args({}, {}, 8 * GiB), 4096, 65536, 0.5, false,
                65536},
        // TP 2: 4 KV heads a rank, 1 MiB a block; 2048 blocks a request.
        Figures{"mixtral-8x7b-v0.1.json", args({}, 2, 20 * GiB), 20480, 327680, 10.0, true, 32768},
        // 40 layers x 64 KiB = 2.5 MiB a block: 1638 blocks, 26208 tokens at most.
        Figures{"qwen3-14b.json", args({}, {}, 4 * GiB), 1638, 26208, 0.64, false, 26208},
        // MLA: 27 layers x 18 KiB (576 x bf16 x 16 tokens) a block.
        Figures{"deepseek-v2-lite.json", args({}, {}, 8 * GiB), 17260, 276160, 1.69, true, 163840},
        // Six groups of five layers, 128 KiB pages (full layers get 32-token blocks); a request
        // takes 5 x 577 sliding blocks (cdiv(1023 + 8192, 16) + 1) + 1024 full blocks.
        Figures{"gemma-4-26b-a4b.json", args(32768, {}, 20 * GiB), 32768, 524288, 8.38, true,
                32768},
        // Every layer slides over 4096 tokens: 769 blocks a request, whatever its length.
        Figures{"mistral-7b-v0.1.json", args({}, {}, 2 * GiB), 1024, 16384, 1.33, true, 32768}));

}  // namespace
}  // namespace attnrt
