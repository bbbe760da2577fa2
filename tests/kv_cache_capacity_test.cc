// vLLM's start-up capacity check: the bytes one max_model_len request needs, the estimate of the
// longest length a budget holds, the refusal texts, and max_concurrency on vLLM's numbers.
// Ported from vLLM's tests/v1/core/test_kv_cache_utils.py and tests/v1/engine/
// test_init_error_messaging.py.

#include "attnrt/kv/kv_cache_capacity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;
constexpr std::uint64_t kGiB = 1024 * kMiB;

const char* const kNoMemory =
    "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
    "initializing the engine.";
const char* const kTryTail =
    "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
    "engine.";

LayerSpecs repeated(const KVCacheSpec& spec, int count, const std::string& prefix = "layer_") {
  LayerSpecs specs;
  specs.reserve(count);
  for (int i = 0; i < count; ++i) specs.emplace_back(prefix + std::to_string(i), spec);
  return specs;
}

EngineConfig engine(int max_model_len, int max_num_batched_tokens = 2048) {
  EngineConfig config;
  config.model.max_model_len = max_model_len;
  config.scheduler.max_num_batched_tokens = max_num_batched_tokens;
  return config;
}

// vLLM's Qwen1.5-7B shape: 32 layers of 32 KV heads × 128, float16, 16-token blocks. A page is
// 16 × 32 × 256 × 2 = 256 KiB, so one token of all 32 layers takes 512 KiB and 8 GiB holds 16384.
KVCacheSpec qwen_full() {
  return KVCacheSpec::full(16, 32, 128, DType::f16);
}
KVCacheSpec qwen_sliding() {
  return KVCacheSpec::sliding(16, 32, 128, DType::f16, 1024);
}

// One layer of vLLM's test_init_error_messaging shape: 8 KV heads × 128, float16: 64 KiB pages.
KVCacheSpec oom_full() {
  return KVCacheSpec::full(16, 8, 128, DType::f16);
}

// --- vLLM test_estimate_max_model_len ------------------------------------------------------------

TEST(KVCacheCapacityTest, EstimateMaxModelLenOfVllmTest) {
  const LayerSpecs specs = repeated(qwen_full(), 32);
  EXPECT_EQ(max_memory_usage_bytes(specs, engine(16384, 32768)),
            static_cast<std::int64_t>(8 * kGiB));
  // 16385 tokens need one block more than 8 GiB holds; 16383 fit whole.
  EXPECT_EQ(estimate_max_model_len(specs, engine(16385, 32768), 8 * kGiB), 16384);
  EXPECT_EQ(estimate_max_model_len(specs, engine(16383, 32768), 8 * kGiB), 16383);
}

TEST(KVCacheCapacityTest, VllmEstimateCaseRefusesWithTheEstimate) {
  const LayerSpecs specs = repeated(qwen_full(), 32);
  const KVCacheCapacity capacity = check_kv_cache_capacity(specs, engine(16385, 32768), 8 * kGiB);
  EXPECT_FALSE(capacity.fits);
  EXPECT_EQ(capacity.max_model_len, 16385);
  // cdiv(16385, 16) = 1025 blocks × 256 KiB × 32 layers = 8200 MiB.
  EXPECT_EQ(capacity.needed_bytes, static_cast<std::int64_t>(8200 * kMiB));
  EXPECT_EQ(capacity.available_bytes, 8 * kGiB);
  EXPECT_EQ(capacity.estimated_max_model_len, 16384);
  EXPECT_EQ(capacity.message(),
            std::string("To serve at least one request with the model's max seq len (16385), "
                        "(8.01 GiB KV cache is needed, which is larger than the available KV "
                        "cache memory (8.00 GiB). Based on the available memory, the estimated "
                        "maximum model length is 16384. ") +
                kTryTail);

  const KVCacheCapacity fits = check_kv_cache_capacity(specs, engine(16383, 32768), 8 * kGiB);
  EXPECT_TRUE(fits.fits);
  EXPECT_EQ(fits.estimated_max_model_len, 16383);
  EXPECT_EQ(fits.message(), "");
}

// --- vLLM test_kv_cache_oom_no_memory / test_kv_cache_oom_insufficient_memory ------------------

TEST(KVCacheCapacityTest, NoMemoryRefusesBeforeSummingTheNeed) {
  const KVCacheCapacity capacity =
      check_kv_cache_capacity({{"layer_0", oom_full()}}, engine(2048), 0);
  EXPECT_FALSE(capacity.fits);
  EXPECT_EQ(capacity.needed_bytes, 0);
  EXPECT_EQ(capacity.estimated_max_model_len, 0);
  EXPECT_EQ(capacity.message(), kNoMemory);

  // Even layers that need nothing (encoder-only) are refused without memory, as vLLM does.
  KVCacheSpec encoder_only = oom_full();
  encoder_only.kind = KVSpecKind::encoder_only;
  EXPECT_EQ(check_kv_cache_capacity({{"enc", encoder_only}}, engine(2048), 0).message(), kNoMemory);
  EXPECT_TRUE(check_kv_cache_capacity({{"enc", encoder_only}}, engine(2048), 1).fits);
}

TEST(KVCacheCapacityTest, HundredGiBNeededOneAvailable) {
  // vLLM patches the need to 100 GiB; here 12800 layers × 128 blocks × 64 KiB make it for real.
  // One 16-token block of every layer takes 800 MiB, so 1 GiB holds 16 tokens.
  const LayerSpecs specs = repeated(oom_full(), 12800);
  const KVCacheCapacity capacity = check_kv_cache_capacity(specs, engine(2048), kGiB);
  EXPECT_FALSE(capacity.fits);
  EXPECT_EQ(capacity.needed_bytes, static_cast<std::int64_t>(100 * kGiB));
  EXPECT_EQ(capacity.estimated_max_model_len, 16);
  EXPECT_EQ(capacity.message(),
            std::string("To serve at least one request with the model's max seq len (2048), "
                        "(100.00 GiB KV cache is needed, which is larger than the available KV "
                        "cache memory (1.00 GiB). Based on the available memory, the estimated "
                        "maximum model length is 16. ") +
                kTryTail);
}

TEST(KVCacheCapacityTest, SixtyFourPagesHoldHalfOfTwoThousandTokens) {
  // vLLM's newer insufficient-memory case: 2048 tokens need 128 pages; 64 pages hold 1024 tokens.
  const KVCacheSpec spec = oom_full();
  const KVCacheCapacity capacity = check_kv_cache_capacity(
      {{"layer_0", spec}}, engine(2048), 64 * static_cast<std::uint64_t>(spec.page_size_bytes()));
  EXPECT_FALSE(capacity.fits);
  EXPECT_EQ(capacity.needed_bytes, 128 * spec.page_size_bytes());
  EXPECT_EQ(capacity.estimated_max_model_len, 1024);
  const std::string message = capacity.message();
  EXPECT_NE(message.find("To serve at least one request with the model's max seq len (2048)"),
            std::string::npos);
  EXPECT_NE(message.find("(0.01 GiB KV cache is needed"), std::string::npos);  // 8 MiB
  EXPECT_NE(message.find("memory (0.00 GiB)"), std::string::npos);             // 4 MiB
  EXPECT_NE(message.find("the estimated maximum model length is 1024. Try"), std::string::npos);
}

// --- The edges of the check ----------------------------------------------------------------------

TEST(KVCacheCapacityTest, NotEvenOneTokenLeavesOutTheEstimateSentence) {
  const KVCacheCapacity capacity =
      check_kv_cache_capacity({{"layer_0", oom_full()}}, engine(2048), 1000);
  EXPECT_FALSE(capacity.fits);
  EXPECT_EQ(capacity.estimated_max_model_len, 0);
  EXPECT_EQ(capacity.message(),
            std::string("To serve at least one request with the model's max seq len (2048), "
                        "(0.01 GiB KV cache is needed, which is larger than the available KV "
                        "cache memory (0.00 GiB). ") +
                kTryTail);
}

TEST(KVCacheCapacityTest, EmptySpecsAlwaysFit) {
  for (std::uint64_t memory : {std::uint64_t{0}, kGiB}) {
    const KVCacheCapacity capacity = check_kv_cache_capacity({}, engine(4096), memory);
    EXPECT_TRUE(capacity.fits);
    EXPECT_EQ(capacity.needed_bytes, 0);
    EXPECT_EQ(capacity.estimated_max_model_len, 4096);
    EXPECT_EQ(capacity.message(), "");
  }
  EXPECT_EQ(max_memory_usage_bytes({}, engine(4096)), 0);
}

TEST(KVCacheCapacityTest, ExactFitFitsOneByteLessDoesNot) {
  const LayerSpecs specs = repeated(oom_full(), 2);
  const auto need = static_cast<std::uint64_t>(max_memory_usage_bytes(specs, engine(2048)));
  ASSERT_EQ(need, 2 * 128 * 64 * kKiB);
  EXPECT_TRUE(check_kv_cache_capacity(specs, engine(2048), need).fits);
  const KVCacheCapacity short_by_one = check_kv_cache_capacity(specs, engine(2048), need - 1);
  EXPECT_FALSE(short_by_one.fits);
  EXPECT_EQ(short_by_one.estimated_max_model_len, 127 * 16);  // one block a layer less
}

TEST(KVCacheCapacityTest, SlidingWindowNeedStopsGrowingPastTheWindow) {
  // Window 1024 and 2048 tokens per step: a request holds at most cdiv(3071, 16) + 1 = 193 blocks
  // however long the model, so 193 pages let a 1 Mi-token model start.
  const KVCacheSpec window = KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1024);
  const auto page = static_cast<std::uint64_t>(window.page_size_bytes());
  const EngineConfig config = engine(1 << 20, 2048);
  EXPECT_EQ(max_memory_usage_bytes({{"sw", window}}, config),
            static_cast<std::int64_t>(193 * page));
  EXPECT_TRUE(check_kv_cache_capacity({{"sw", window}}, config, 193 * page).fits);
  // 192 pages: cdiv(len, 16) + 1 <= 192 holds up to 191 blocks of 16 tokens.
  EXPECT_EQ(estimate_max_model_len({{"sw", window}}, config, 192 * page), 191 * 16);
}

TEST(KVCacheCapacityTest, CrossAttentionNeedDoesNotShrinkWithTheLength) {
  // A cross layer holds cdiv(max_encoder_len 1500, 16) = 94 blocks at every length.
  const KVCacheSpec cross = KVCacheSpec::cross(16, 8, 64, DType::bf16);
  const auto page = static_cast<std::uint64_t>(cross.page_size_bytes());
  const LayerSpecs specs = {{"self", KVCacheSpec::full(16, 8, 64, DType::bf16)}, {"cross", cross}};
  const EngineConfig config = engine(4096);
  EXPECT_EQ(max_memory_usage_bytes(specs, config), static_cast<std::int64_t>((256 + 94) * page));
  EXPECT_EQ(estimate_max_model_len(specs, config, 94 * page), 0);
  EXPECT_EQ(estimate_max_model_len(specs, config, (94 + 10) * page), 160);
}

TEST(KVCacheCapacityTest, SumPastInt64IsRefused) {
  // 2^20 heads × (2^19 + 2^19) entries × 2 bytes: 2^41-byte one-token pages; 2^21 tokens make
  // 2^62 bytes a layer, which fits, but two layers make 2^63.
  const KVCacheSpec huge = KVCacheSpec::full(1, 1 << 20, 1 << 19, DType::bf16);
  const EngineConfig config = engine(1 << 21);
  EXPECT_EQ(max_memory_usage_bytes({{"a", huge}}, config), std::int64_t{1} << 62);
  const std::string message = error_of([&] { max_memory_usage_bytes(repeated(huge, 2), config); });
  EXPECT_NE(message.find("KV cache bytes per request, summed over layers"), std::string::npos);
  EXPECT_NE(error_of([&] {
              check_kv_cache_capacity(repeated(huge, 9), config, kGiB);
            }).find("KV cache bytes per request"),
            std::string::npos);
}

TEST(KVCacheCapacityTest, HundredThousandLayerConfigEstimatesLikeAnEmptyOne) {
  // The search probes a copy without the layers: a config with 100 000 of them gives the same.
  const int layers = 100000;
  EngineConfig big = engine(8192);
  big.model.layers.resize(layers);
  for (int i = 0; i < layers; ++i) big.model.layers[i].name = "layer_" + std::to_string(i);
  const LayerSpecs specs = repeated(oom_full(), layers);
  const std::uint64_t memory = 100 * kGiB;
  const int estimate = estimate_max_model_len(specs, big, memory);
  EXPECT_EQ(estimate, estimate_max_model_len(specs, engine(8192), memory));
  // One block of every layer takes 100 000 × 64 KiB: 100 GiB holds 16 blocks.
  EXPECT_EQ(estimate, 16 * 16);
  EXPECT_EQ(big.model.max_model_len, 8192);
  EXPECT_EQ(big.model.layers.size(), static_cast<std::size_t>(layers));
}

TEST(KVCacheCapacityTest, FormatGibHasTwoDecimals) {
  EXPECT_EQ(format_gib(0), "0.00");
  EXPECT_EQ(format_gib(kGiB), "1.00");
  EXPECT_EQ(format_gib(3 * kGiB / 2), "1.50");
  EXPECT_EQ(format_gib(8200 * kMiB), "8.01");
  EXPECT_EQ(format_gib(kGiB / 8), "0.12");  // a tie rounds to even, as Python's format does
}

// --- vLLM test_get_max_concurrency_for_kv_cache_config -------------------------------------------

// max_model_len 16384 and 1024 tokens per step, as vLLM's test: a full group needs 1024 blocks a
// request, a 1024-token window cdiv(2047, 16) + 1 = 129.
KVCacheConfig groups_config(std::int64_t num_blocks, std::vector<KVCacheSpec> group_specs) {
  KVCacheConfig config;
  config.num_blocks = num_blocks;
  int next = 0;
  for (const KVCacheSpec& spec : group_specs) {
    KVCacheGroupSpec group;
    for (int i = 0; i < 32; ++i) group.layer_names.push_back("layer_" + std::to_string(next++));
    group.kv_cache_spec = spec;
    config.kv_cache_groups.push_back(std::move(group));
  }
  return config;
}

TEST(KVCacheCapacityTest, MaxConcurrencyOfVllmFullSlidingAndHybridGroups) {
  const EngineConfig config = engine(16384, 1024);
  EXPECT_DOUBLE_EQ(max_concurrency(groups_config(1536, {qwen_full()}), config), 1.5);
  EXPECT_DOUBLE_EQ(max_concurrency(groups_config(129 * 3, {qwen_sliding()}), config), 3.0);
  EXPECT_DOUBLE_EQ(
      max_concurrency(groups_config((1024 + 129) * 3, {qwen_full(), qwen_sliding()}), config), 3.0);
}

TEST(KVCacheCapacityTest, MaxConcurrencyOfChunkedLocalGroups) {
  // Not in vLLM's test; from ChunkedLocalAttentionSpec's bound: min(1024 + 1024, 16384) tokens
  // in 16-token blocks hold 128 blocks a request, with no extra block (the chunk does not slide).
  const KVCacheSpec chunked = KVCacheSpec::chunked_local(16, 32, 128, DType::f16, 1024);
  const EngineConfig config = engine(16384, 1024);
  EXPECT_DOUBLE_EQ(max_concurrency(groups_config(128 * 3, {chunked}), config), 3.0);
  EXPECT_DOUBLE_EQ(max_concurrency(groups_config((1024 + 128) * 3, {qwen_full(), chunked}), config),
                   3.0);
  // A short model caps the chunk: 512 tokens are 32 blocks.
  EXPECT_DOUBLE_EQ(max_concurrency(groups_config(64, {chunked}), engine(512, 1024)), 2.0);
}

}  // namespace
}  // namespace attnrt
