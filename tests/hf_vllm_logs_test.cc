// Real vLLM start-up logs, reproduced with attnrt's planner (tests/data/hf/vllm-logs.md lists each
// log with its source, version, GPU, engine arguments and the lines verbatim). vLLM prints
// "Available KV cache memory: X GiB" with two decimals, so the budget per rank lies in
// [X - 0.005, X + 0.005) GiB: each case is planned at both ends, and every figure the log prints
// must lie between what the two ends give.
//
// Every log reproduced here comes from a vLLM older than about v0.20 (0.10-0.11 mostly) or from
// the V0 engine: their "GPU KV cache size" is num_blocks // groups x block size
// (VllmKvCacheLog::kv_cache_tokens_v0_19). A case's comment gives the newer rule's figure,
// int(concurrency x max_model_len), where it would differ.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/model_source.h"
#include "attnrt/kv/hybrid_block_size.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/vllm_kv_cache_log.h"

namespace attnrt {
namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

std::string fixture_path(const std::string& name) {
  return std::string(ATTNRT_SOURCE_DIR) + "/tests/data/hf/" + name;
}

// The engine arguments these runs set, under vLLM's flag names; the budget comes from the log.
struct VllmArgs {
  std::optional<int> max_model_len = std::nullopt;
  std::optional<int> tensor_parallel_size = std::nullopt;
  std::optional<int> block_size = std::nullopt;
  std::optional<std::string> kv_cache_dtype = std::nullopt;
  std::optional<int> max_num_batched_tokens = std::nullopt;
  std::optional<bool> enable_prefix_caching = std::nullopt;  // unset: attnrt's (newest vLLM's)

  EngineArgs with_memory(std::uint64_t memory) const {
    EngineArgs engine;
    engine.max_model_len = max_model_len;
    engine.tensor_parallel_size = tensor_parallel_size;
    engine.block_size = block_size;
    engine.kv_cache_dtype = kv_cache_dtype;
    engine.max_num_batched_tokens = max_num_batched_tokens;
    engine.enable_prefix_caching = enable_prefix_caching;
    engine.memory = memory;
    return engine;
  }
};

// One start-up log: what vLLM was asked for and what it printed.
struct LoggedStartup {
  std::string source;        // the log, for SCOPED_TRACE
  std::string file;          // tests/data/hf/
  VllmArgs args = {};        // the run's engine arguments
  double available_gib = 0;  // "Available KV cache memory: X GiB" (this worker's)
  std::optional<std::int64_t> tokens = std::nullopt;  // "GPU KV cache size: N tokens"
  // "Maximum concurrency for L tokens per request: C.CCx"
  std::optional<double> max_concurrency = std::nullopt;
  // "num_gpu_blocks is: N" (the pool, the smallest over workers); V0's "# GPU blocks: N"
  std::optional<std::int64_t> num_blocks = std::nullopt;
  // V0's refusal: "... the maximum number of tokens that can be stored in KV cache (N)"
  std::optional<int> refused_max_len = std::nullopt;
};

const std::vector<LoggedStartup>& logged_startups() {
  static const std::vector<LoggedStartup> logs = {
      // Version not stated (a Jan 2026 build, kv_cache_utils.py:1305, before the one-line
      // report). 28 layers x 8 KV heads x 128 x bf16 x K+V = 112 KiB a token. At 1024 tokens a
      // request takes whole blocks, so the older and newer token rules print the same.
      {.source = "vllm-project/vllm#33263: Qwen3-1.7B, max_model_len 1024",
       .file = "qwen3-1.7b.json",
       .args = {.max_model_len = 1024},
       .available_gib = 18.78,
       .tokens = 175856},
      // vLLM ~0.10.2 (kv_cache_utils.py:864/868, as in the 0.10.2 log of Qwen3-235B below);
      // older token rule. 40 layers x 160 KiB a token; 2048 blocks a 32768-token request.
      {.source = "LMCache/LMCache#1739: Qwen3-14B, max_model_len 32768",
       .file = "qwen3-14b.json",
       .args = {.max_model_len = 32768},
       .available_gib = 6.51,
       .tokens = 42656,
       .max_concurrency = 1.30},
      // The V0 engine (Dec 2024, RTX 3090) prints blocks and kv_cache_size=3.81GiB, no token
      // line; its concurrency, blocks x 16 / max_model_len, is blocks / cdiv(20000, 16) here.
      {.source = "vllm-project/vllm#10517: Llama-3.1-8B-Instruct (V0), max_model_len 20000",
       .file = "llama-3.1-8b-instruct.json",
       .args = {.max_model_len = 20000},
       .available_gib = 3.81,
       .max_concurrency = 1.56,
       .num_blocks = 1952},
      // The same comment's 29k run: 1478 blocks store 23648 tokens < 29000, so V0 refuses;
      // attnrt's estimated max model len is that same multiple of 16.
      {.source = "vllm-project/vllm#10517: Llama-3.1-8B-Instruct (V0), max_model_len 29000",
       .file = "llama-3.1-8b-instruct.json",
       .args = {.max_model_len = 29000},
       .available_gib = 2.89,
       .max_concurrency = 0.82,
       .num_blocks = 1478,
       .refused_max_len = 23648},
      // A Nov 2025 nightly (kv_cache_utils.py:1229, two-line report) on 8 x H200; older rule.
      // MLA: one 576-wide latent on every rank, 61 x 1152 B a token; FlashMLA on Hopper forces
      // 64-token blocks. The default max_model_len, 262144, is a multiple of 64.
      {.source = "vllm-project/recipes Kimi-K2-Think.md: Kimi-K2-Thinking, TP 8",
       .file = "kimi-k2-thinking.json",
       .args = {.tensor_parallel_size = 8, .block_size = 64},
       .available_gib = 46.80,
       .tokens = 715072},
      // dennislee22/vLLM-benchmarking, vLLM 0.10.1.1 on A100s; older token rule. Qwen2-7B: 28
      // layers x 4 KV heads x 128 (56 KiB a token); TP 2 keeps 2 KV heads a rank.
      {.source = "dennislee22 vllm-7B-1gpuA10080GB-0.25GRAM.log: Qwen2-7B-Instruct, TP 1",
       .file = "qwen2-7b-instruct.json",
       .args = {.max_model_len = 16384},
       .available_gib = 5.01,
       .tokens = 93872,
       .max_concurrency = 5.73,
       .num_blocks = 5867},
      {.source = "dennislee22 vllm-7B-1gpuA10080GB-0.5GRAM.log: Qwen2-7B-Instruct, TP 1",
       .file = "qwen2-7b-instruct.json",
       .args = {.max_model_len = 16384},
       .available_gib = 24.83,
       .tokens = 464848,
       .max_concurrency = 28.37,
       .num_blocks = 29053},
      {.source = "dennislee22 vllm-7B-2gpuA10080GB-0.25GRAM-same-node.log: Qwen2-7B-Instruct, TP 2",
       .file = "qwen2-7b-instruct.json",
       .args = {.max_model_len = 16384, .tensor_parallel_size = 2},
       .available_gib = 12.02,
       .tokens = 450192,
       .max_concurrency = 27.48,
       .num_blocks = 28137},
      {.source = "dennislee22 vllm-7B-2gpuA10080GB-0.5GRAM-same-node.log: Qwen2-7B-Instruct, TP 2",
       .file = "qwen2-7b-instruct.json",
       .args = {.max_model_len = 16384, .tensor_parallel_size = 2},
       .available_gib = 31.83,
       .tokens = 1192160,
       .max_concurrency = 72.76,
       .num_blocks = 74510},
      {.source = "dennislee22 vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log: Qwen2-7B-Instruct, TP 2",
       .file = "qwen2-7b-instruct.json",
       .args = {.max_model_len = 16384, .tensor_parallel_size = 2},
       .available_gib = 11.03,
       .tokens = 412944,
       .max_concurrency = 25.20},
      // vLLM 0.10.1.1 on 4 x A100; older token rule (the newer one would print ~4.66M). 18
      // sliding (window 128) + 18 full layers, 2 KV heads a rank: two groups of 18. On an A100
      // the API server schedules 2048 tokens a step (logged), so a sliding group holds
      // cdiv(127 + 2048, 16) + 1 = 137 blocks of a request; with 8192 the concurrency is 213.6.
      {.source = "dennislee22 vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes.log: gpt-oss-120b, TP 4",
       .file = "gpt-oss-120b.json",
       .args = {.max_model_len = 16384, .tensor_parallel_size = 4, .max_num_batched_tokens = 2048},
       .available_gib = 45.32,
       .tokens = 2640144,
       .max_concurrency = 284.25},
      // Version, GPU and max_model_len not stated (one GPU implied). The older rule reads
      // neither the length nor the batched tokens; the newer one would print ~147k.
      {.source = "alvarobartt/hf-mem#60: gpt-oss-120b, TP 1",
       .file = "gpt-oss-120b.json",
       .available_gib = 5.38,
       .tokens = 78384},
      // vLLM 0.11.0 (NVIDIA container 25.11) on a DGX Spark, a GPTQ checkpoint run with
      // --dtype float16: the float16 cache is the bf16 one's size. Older token rule; no window.
      {.source = "ArmDeveloperEcosystem/arm-learning-paths dgx_spark_voicechatbot: "
                 "Mistral-7B-Instruct-v0.2-GPTQ",
       .file = "mistral-7b-instruct-v0.2.json",
       .args = {.max_model_len = 32768, .kv_cache_dtype = "float16"},
       .available_gib = 102.56,
       .tokens = 840160,
       .max_concurrency = 25.64,
       .num_blocks = 52510},
      // vLLM 0.10.2 on 8 x L40S; older token rule. Each worker logs its own budget and vLLM
      // 0.10.2 one token line per worker (rank order); the pool keeps the smallest, 14834
      // blocks. 4 KV heads on 8 ranks: one replicated head, 94 x 512 B a token.
      {.source = "Qwen3-235B-A22B-Instruct-2507-FP8 on 8xL40S (index id 38962983769), TP 8, rank 0",
       .file = "qwen3-235b-a22b-instruct-2507-fp8.json",
       .args = {.max_model_len = 32768, .tensor_parallel_size = 8},
       .available_gib = 10.68,
       .tokens = 238208,
       .max_concurrency = 7.27},
      {.source = "Qwen3-235B-A22B-Instruct-2507-FP8 on 8xL40S (index id 38962983769), TP 8, rank 3",
       .file = "qwen3-235b-a22b-instruct-2507-fp8.json",
       .args = {.max_model_len = 32768, .tensor_parallel_size = 8},
       .available_gib = 10.65,
       .tokens = 237520,
       .max_concurrency = 7.25},
      {.source = "Qwen3-235B-A22B-Instruct-2507-FP8 on 8xL40S (index id 38962983769), TP 8, rank 2",
       .file = "qwen3-235b-a22b-instruct-2507-fp8.json",
       .args = {.max_model_len = 32768, .tensor_parallel_size = 8},
       .available_gib = 10.64,
       .tokens = 237344,
       .max_concurrency = 7.24,
       .num_blocks = 14834},
      // Hybrids with prefix caching on (the default here too): vLLM's "align" mode charges each
      // of the 3 Gated DeltaNet groups 2 state blocks a request. vLLM 0.16.1; older token rule.
      // fp8 cache: 4 KV heads x 256 x 2 = 2 KiB a token and layer; state 2146304 B, so 1056-token
      // blocks (padding 0.76%); 4 groups of 8 slots; 150 blocks; a 16384-token request takes 16
      // attention + 6 state blocks: 150 / 22 = 6.82 (with "none" it would be 150 / 19 = 7.89).
      {.source = "Qwen3.5-9B on an L40S (index id 54355267735), vLLM 0.16.1, kv_cache_dtype fp8",
       .file = "qwen3.5-9b.json",
       .args = {.max_model_len = 16384, .kv_cache_dtype = "fp8", .max_num_batched_tokens = 4096},
       .available_gib = 2.43,
       .tokens = 39072,
       .max_concurrency = 6.82},
      // vLLM 0.17.1; 2 KV heads: 1 KiB a token, 2096-token blocks (no padding), 4 groups of 10
      // slots; 284 blocks; 16 + 6 blocks a 32768-token request.
      {.source = "Qwen3.5-35B-A3B (index id 63574967224), vLLM 0.17.1, kv_cache_dtype fp8",
       .file = "qwen3.5-35b-a3b.json",
       .args = {.max_model_len = 32768, .kv_cache_dtype = "fp8", .max_num_batched_tokens = 8192},
       .available_gib = 5.69,
       .tokens = 148816,
       .max_concurrency = 12.91},
      // vLLM 0.10.2 on 2 x H200, prefix caching off; older token rule, which divides by the 4
      // groups (the newer one would print ~3.87M). The Instruct model has the Thinking model's
      // architecture. Block 544 (test below); 12 slots of 557056 B; a 262144-token request
      // takes 482 attention blocks + 3 state blocks.
      {.source = "Qwen3-Next-80B-A3B-Instruct launch log (index id 7292846353), TP 2",
       .file = "qwen3-next-80b-a3b-thinking.json",
       .args = {.tensor_parallel_size = 2, .enable_prefix_caching = false},
       .available_gib = 44.59,
       .tokens = 973760,
       .max_concurrency = 14.77},
      // vLLM 0.11.0rc2 on ROCm; older token rule (the newer one would print ~205.0k). 52
      // sliding (window 1024) + 10 full layers: 6 sliding groups + 1 full group of 10 slots
      // (vLLM's "Add 8 padding layers"). 8192 batched tokens, vLLM's API-server default on a
      // GPU of 70 GiB or more: a sliding group holds all 4096 tokens + 1 block (with 2048 the
      // concurrency would be 63.64).
      {.source = "gemma-3-27b-it ROCm start-up log (index id 9297248278), max_model_len 4096",
       .file = "gemma-3-27b-it.json",
       .args = {.max_model_len = 4096, .max_num_batched_tokens = 8192},
       .available_gib = 109.86,
       .tokens = 205696,
       .max_concurrency = 50.05,
       .num_blocks = 89994},
      // vLLM 0.11.0 on an L40S; older token rule. A Granite 4 config whose layers are all
      // attention: no state layers, so 16-token blocks. (The figures also fit 656-token blocks,
      // 706 x 656 = 463136, as a vLLM that aligned this model as a hybrid would use.)
      {.source = "IBM Code Engine Granite 4 batch tutorial (index id 22371651172): "
                 "granite-4.0-micro",
       .file = "granite-4.0-micro.json",
       .args = {.max_model_len = 131072},
       .available_gib = 35.34,
       .tokens = 463136,
       .max_concurrency = 3.53},
  };
  return logs;
}

// The byte counts that print as `gib` with two decimals: [gib - 0.005, gib + 0.005) GiB.
struct Budget {
  std::uint64_t lowest;
  std::uint64_t highest;
};

Budget budget_of(double gib) {
  const auto centi = static_cast<std::uint64_t>(std::llround(gib * 100));
  // The first byte count at or above (half_centi / 200) GiB.
  const auto from = [](std::uint64_t half_centi) { return (half_centi * GiB + 199) / 200; };
  return {from(2 * centi - 1), from(2 * centi + 1) - 1};
}

struct PlannedFigures {
  std::int64_t tokens;
  double max_concurrency;
  std::int64_t num_blocks;
  bool fits;
  int estimated_max_model_len;
};

PlannedFigures plan_with(const LoggedStartup& logged, std::uint64_t memory) {
  const LoadedModel model = load_model(fixture_path(logged.file), logged.args.with_memory(memory));
  const AttentionPlan plan = plan_attention(model.config, backend_registry_for(model.config));
  const VllmKvCacheLog lines = vllm_kv_cache_log(plan.kv, model.config);
  return {lines.kv_cache_tokens_v0_19, lines.max_concurrency, plan.kv.kv_cache_config.num_blocks,
          plan.kv.capacity.fits, plan.kv.capacity.estimated_max_model_len};
}

TEST(HfVllmLogsTest, BudgetBoundsAreTheBytesThatPrintAsTheLoggedGib) {
  const Budget budget = budget_of(44.59);
  EXPECT_EQ(budget.lowest, 47872779224u);   // ceil(44.585 GiB)
  EXPECT_EQ(budget.highest, 47883516641u);  // ceil(44.595 GiB) - 1
  EXPECT_LT(static_cast<double>(budget.lowest - 1) / static_cast<double>(GiB), 44.585);
  EXPECT_GE(static_cast<double>(budget.highest + 1) / static_cast<double>(GiB), 44.595);
}

TEST(HfVllmLogsTest, PlanAtBothEndsOfTheLoggedBudgetBracketsTheLoggedFigures) {
  for (const LoggedStartup& logged : logged_startups()) {
    SCOPED_TRACE(logged.source);
    const Budget budget = budget_of(logged.available_gib);
    const PlannedFigures low = plan_with(logged, budget.lowest);
    const PlannedFigures high = plan_with(logged, budget.highest);
    if (logged.tokens) {
      EXPECT_LE(low.tokens, *logged.tokens);
      EXPECT_GE(high.tokens, *logged.tokens);
    }
    if (logged.max_concurrency) {  // printed with %.2f
      EXPECT_GE(*logged.max_concurrency, low.max_concurrency - 0.005);
      EXPECT_LE(*logged.max_concurrency, high.max_concurrency + 0.005);
    }
    if (logged.num_blocks) {
      EXPECT_LE(low.num_blocks, *logged.num_blocks);
      EXPECT_GE(high.num_blocks, *logged.num_blocks);
    }
    if (logged.refused_max_len) {
      EXPECT_FALSE(high.fits);
      EXPECT_LE(low.estimated_max_model_len, *logged.refused_max_len);
      EXPECT_GE(high.estimated_max_model_len, *logged.refused_max_len);
    } else {
      EXPECT_TRUE(low.fits);  // vLLM started
    }
  }
}

TEST(HfVllmLogsTest, Qwen3NextOnTwoRanksAlignsItsBlockAsVllm0102Logs) {
  // Per rank: 1 KV head of 256 (1 KiB a token and layer) and a Gated DeltaNet state of
  // (3, 4096) + (16, 128, 128) bf16 = 548864 B: 16 x cdiv(548864, 16 x 1024) = 544 tokens.
  const VllmArgs args{.tensor_parallel_size = 2};
  const LoadedModel model = load_model(fixture_path("qwen3-next-80b-a3b-thinking.json"),
                                       args.with_memory(budget_of(44.59).lowest));
  const AttentionPlan plan = plan_attention(model.config, backend_registry_for(model.config));
  ASSERT_TRUE(plan.kv.hybrid_block_size.has_value());
  const HybridBlockSize& hybrid = *plan.kv.hybrid_block_size;
  EXPECT_EQ(hybrid.block_size_message().value_or(""),
            std::string("Setting attention block size to 544 tokens to ensure that attention page "
                        "size is >= mamba page size."));
  EXPECT_EQ(hybrid.padding_message().value_or(""),
            std::string("Padding mamba page size by 1.49% to ensure that mamba page size and "
                        "attention page size are exactly equal."));
}

}  // namespace
}  // namespace attnrt
