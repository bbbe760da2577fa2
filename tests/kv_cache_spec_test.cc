// KVCacheSpec: page sizes of every kind, padding, compression, and per-request memory bounds
// (SEMANTICS §4.1). Expected values are computed by hand in the comments.

#include "attnrt/kv/kv_cache_spec.h"

#include <gtest/gtest.h>

#include <type_traits>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

// max_model_len 4096, max_num_batched_tokens 2048, max_encoder_len 1500.
EngineConfig memory_config() {
  EngineConfig config;
  config.model.max_model_len = 4096;
  config.model.max_encoder_len = 1500;
  config.scheduler.max_num_batched_tokens = 2048;
  return config;
}

// The spec kind is the attention type, so the two can share one name table.
static_assert(std::is_same_v<KVSpecKind, AttentionType>);

TEST(KVCacheSpecTest, KindNamesAreTheAttentionTypeNames) {
  EXPECT_EQ(attention_type_name(KVCacheSpec::full(16, 1, 8, DType::f32).kind), "full");
  EXPECT_EQ(attention_type_name(KVCacheSpec::sliding(16, 1, 8, DType::f32, 4).kind),
            "sliding_window");
}

TEST(KVCacheSpecTest, FullPageIsHeadsTimesTokensTimesKAndV) {
  const KVCacheSpec spec = KVCacheSpec::full(16, 8, 64, DType::bf16);
  EXPECT_EQ(spec.kind, KVSpecKind::full);
  EXPECT_EQ(spec.head_size_v, 64);  // -1: same as head_size
  EXPECT_EQ(spec.num_heads(), 8);
  EXPECT_EQ(spec.num_states(), 16);
  EXPECT_EQ(spec.state_content_size_bytes(), 256);    // (64 + 64) × 2
  EXPECT_EQ(spec.real_page_size_bytes(), 32 * 1024);  // 8 × 16 × 256
  EXPECT_EQ(spec.page_size_bytes(), 32 * 1024);
  EXPECT_FALSE(spec.is_padded());
  EXPECT_TRUE(spec.owns_kv_cache());
  EXPECT_EQ(spec, KVCacheSpec::full(16, 8, 64, DType::bf16, 64));
}

TEST(KVCacheSpecTest, DistinctValueHeadSize) {
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 128, DType::bf16, 64);
  EXPECT_EQ(spec.head_size_v, 64);
  EXPECT_EQ(spec.state_content_size_bytes(), 384);  // (128 + 64) × 2
  EXPECT_EQ(spec.page_size_bytes(), 12288);         // 2 × 16 × 384
  EXPECT_NE(spec, KVCacheSpec::full(16, 2, 128, DType::bf16));
}

TEST(KVCacheSpecTest, WindowedAndCrossKinds) {
  const KVCacheSpec sliding = KVCacheSpec::sliding(16, 4, 64, DType::f16, 1024);
  EXPECT_EQ(sliding.kind, KVSpecKind::sliding_window);
  EXPECT_EQ(sliding.sliding_window, 1024);
  EXPECT_EQ(sliding.page_size_bytes(), 16384);  // 4 × 16 × (64 + 64) × 2

  const KVCacheSpec chunked = KVCacheSpec::chunked_local(32, 1, 32, DType::f32, 8192);
  EXPECT_EQ(chunked.kind, KVSpecKind::chunked_local);
  EXPECT_EQ(chunked.attention_chunk_size, 8192);
  EXPECT_EQ(chunked.page_size_bytes(), 8192);  // 1 × 32 × (32 + 32) × 4

  const KVCacheSpec cross = KVCacheSpec::cross(16, 2, 64, DType::fp8_e4m3, 32);
  EXPECT_EQ(cross.kind, KVSpecKind::cross);
  EXPECT_EQ(cross.page_size_bytes(), 3072);  // 2 × 16 × (64 + 32) × 1
}

TEST(KVCacheSpecTest, PaddedPage) {
  KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  spec.page_size_padded = 384;
  EXPECT_EQ(spec.real_page_size_bytes(), 256);  // 16 × (2 + 2) × 4
  EXPECT_EQ(spec.page_size_bytes(), 384);
  EXPECT_TRUE(spec.is_padded());

  spec.page_size_padded = 128;
  EXPECT_NE(error_of([&] { spec.page_size_bytes(); }).find("smaller than the real page 256"),
            std::string::npos);
}

TEST(KVCacheSpecTest, MlaIsOneLatentHeadPaddedToAlignment) {
  const KVCacheSpec plain = KVCacheSpec::mla(64, 576, DType::bf16);
  EXPECT_EQ(plain.num_kv_heads, 1);
  EXPECT_EQ(plain.head_size_v, 0);
  EXPECT_EQ(plain.state_content_size_bytes(), 1152);  // 576 × 2
  EXPECT_EQ(plain.page_size_bytes(), 73728);          // 64 × 1152

  // 73728 = 18 × 4096: already aligned, so no padding and an equal spec.
  const KVCacheSpec aligned = KVCacheSpec::mla(64, 576, DType::bf16, 4096);
  EXPECT_FALSE(aligned.page_size_padded.has_value());
  EXPECT_EQ(aligned, plain);

  // 16 × 1152 = 18432 rounds up to 5 × 4096 = 20480.
  const KVCacheSpec padded = KVCacheSpec::mla(16, 576, DType::bf16, 4096);
  EXPECT_EQ(padded.real_page_size_bytes(), 18432);
  EXPECT_EQ(padded.page_size_bytes(), 20480);
  EXPECT_TRUE(padded.is_padded());
}

TEST(KVCacheSpecTest, CompressedStatesHoldSeveralTokens) {
  KVCacheSpec spec = KVCacheSpec::mla(256, 128, DType::bf16);
  spec.tokens_per_state = 4;
  EXPECT_EQ(spec.num_states(), 64);             // 256 / 4
  EXPECT_EQ(spec.num_kernel_states(64), 16);    // a 64-token kernel block
  EXPECT_EQ(spec.num_kernel_states(2), 1);      // at least one state
  EXPECT_EQ(spec.page_size_bytes(), 64 * 256);  // 64 states × 128 × 2

  spec.tokens_per_state = 1;
  EXPECT_EQ(spec.num_kernel_states(64), 64);  // one state per token
}

TEST(KVCacheSpecTest, HeadSlotsAndExplicitStateContent) {
  KVCacheSpec spec = KVCacheSpec::full(16, 2, 64, DType::fp8_e4m3);
  spec.num_head_slots = 4;
  spec.state_content_bytes = 136;  // e.g. fp8 K/V plus scales
  EXPECT_EQ(spec.num_heads(), 4);
  EXPECT_EQ(spec.state_content_size_bytes(), 136);
  EXPECT_EQ(spec.page_size_bytes(), 8704);  // 4 × 16 × 136
}

TEST(KVCacheSpecTest, MaxMemoryUsagePerKind) {
  const EngineConfig config = memory_config();
  const std::int64_t page = 32 * 1024;
  // cdiv(4096, 16) = 256 blocks.
  EXPECT_EQ(KVCacheSpec::full(16, 8, 64, DType::bf16).max_memory_usage_bytes(config), 256 * page);
  // min(1023 + 2048, 4096) = 3071 tokens → cdiv 192, + 1 = 193 blocks.
  EXPECT_EQ(KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1024).max_memory_usage_bytes(config),
            193 * page);
  // A window as long as the model: min(4095 + 2048, 4096) = 4096 → 256 + 1 blocks.
  EXPECT_EQ(KVCacheSpec::sliding(16, 8, 64, DType::bf16, 4096).max_memory_usage_bytes(config),
            257 * page);
  // min(512 + 2048, 4096) = 2560 → 160 blocks.
  EXPECT_EQ(KVCacheSpec::chunked_local(16, 8, 64, DType::bf16, 512).max_memory_usage_bytes(config),
            160 * page);
  // cdiv(1500, 16) = 94 encoder blocks.
  EXPECT_EQ(KVCacheSpec::cross(16, 8, 64, DType::bf16).max_memory_usage_bytes(config), 94 * page);
  // MLA counts its padded page: 256 × 20480.
  EXPECT_EQ(KVCacheSpec::mla(16, 576, DType::bf16, 4096).max_memory_usage_bytes(config),
            256 * 20480);
  KVCacheSpec encoder_only = KVCacheSpec::full(16, 8, 64, DType::bf16);
  encoder_only.kind = KVSpecKind::encoder_only;
  EXPECT_FALSE(encoder_only.owns_kv_cache());
  EXPECT_EQ(encoder_only.max_memory_usage_bytes(config), 0);
}

TEST(KVCacheSpecTest, MaxBlocksPerRequestRoundsUp) {
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 64, DType::bf16);
  EXPECT_EQ(spec.max_num_blocks_per_req(96), 6);
  EXPECT_EQ(spec.max_num_blocks_per_req(97), 7);
  EXPECT_EQ(spec.max_num_blocks_per_req(1), 1);
}

TEST(KVCacheSpecTest, WithBlockSizeScalesThePage) {
  const KVCacheSpec spec = KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1024);
  const KVCacheSpec doubled = spec.with_block_size(32);
  EXPECT_EQ(doubled.block_size, 32);
  EXPECT_EQ(doubled.page_size_bytes(), 64 * 1024);
  EXPECT_EQ(doubled.sliding_window, 1024);
  EXPECT_EQ(doubled.with_block_size(16), spec);

  // A padded page keeps its size, splits into dense kernel blocks, and never grows.
  const KVCacheSpec padded = KVCacheSpec::mla(16, 576, DType::bf16, 4096);
  EXPECT_EQ(padded.with_block_size(16), padded);
  const KVCacheSpec kernel = padded.with_block_size(8);
  EXPECT_EQ(kernel.block_size, 8);
  EXPECT_FALSE(kernel.is_padded());
  EXPECT_EQ(kernel.page_size_bytes(), 8 * 576 * 2);
  EXPECT_NE(error_of([&] {
              padded.with_block_size(32);
            }).find("a padded page can only be split into kernel blocks that divide"),
            std::string::npos);
  EXPECT_NE(error_of([&] { spec.with_block_size(0); }).find("block size must be positive, got 0"),
            std::string::npos);
}

TEST(KVCacheSpecTest, DescribeIsOneReadableLine) {
  EXPECT_EQ(KVCacheSpec::full(16, 2, 32, DType::bf16).describe(),
            "full(block 16, kv_heads 2, head 32, bfloat16, page 4 KiB)");
  EXPECT_EQ(KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1024, 32).describe(),
            "sliding_window(block 16, kv_heads 8, head 64, head_v 32, window 1024, bfloat16, "
            "page 24 KiB)");
  EXPECT_EQ(KVCacheSpec::mla(16, 576, DType::bf16, 4096).describe(),
            "mla(block 16, kv_heads 1, head 576, bfloat16, page 20 KiB padded from 18 KiB)");
  KVCacheSpec odd = KVCacheSpec::chunked_local(1, 1, 5, DType::f32, 64);
  EXPECT_EQ(odd.describe(),
            "chunked_local(block 1, kv_heads 1, head 5, chunk 64, float32, page 40 B)");
}

TEST(KVCacheSpecTest, FactoriesRejectNonPositiveSizes) {
  EXPECT_EQ(error_of([] { KVCacheSpec::full(0, 8, 64, DType::bf16); }),
            "full KV cache spec: block_size must be positive, got 0");
  EXPECT_EQ(error_of([] { KVCacheSpec::sliding(16, 8, 64, DType::bf16, 0); }),
            "sliding_window KV cache spec: sliding_window must be positive, got 0");
  EXPECT_EQ(error_of([] { KVCacheSpec::mla(16, 0, DType::bf16); }),
            "mla KV cache spec: head_size must be positive, got 0");
}

// --- Sizes past 64 bits: refused with the quantity named, never wrapped ------------------------

TEST(KVCacheSpecTest, PagePastSixtyFourBitsIsRefusedAtConstruction) {
  // 2^20 heads × 2^20 tokens × (2^20 + 2^20) entries × 4 bytes = 2^63 bytes.
  const std::string message =
      error_of([] { KVCacheSpec::full(1 << 20, 1 << 20, 1 << 20, DType::f32); });
  EXPECT_NE(message.find("KV cache page bytes"), std::string::npos) << message;
  // One step below fits: 2^62 bytes.
  EXPECT_EQ(KVCacheSpec::full(1 << 20, 1 << 20, 1 << 20, DType::bf16).page_size_bytes(),
            std::int64_t{1} << 62);
}

TEST(KVCacheSpecTest, PerRequestBytesPastSixtyFourBitsAreRefused) {
  // A 2^52-byte page times cdiv(2^31 - 1, 2^10) = 2^21 blocks per request.
  const KVCacheSpec spec = KVCacheSpec::full(1 << 10, 1 << 20, 1 << 20, DType::bf16);
  EngineConfig config = memory_config();
  config.model.max_model_len = 2147483647;
  const std::string message = error_of([&] { spec.max_memory_usage_bytes(config); });
  EXPECT_NE(message.find("KV cache bytes per request"), std::string::npos) << message;
}

TEST(KVCacheSpecTest, HandBuiltZeroBlockSizeIsAnErrorNotADivisionByZero) {
  KVCacheSpec spec = KVCacheSpec::full(16, 8, 64, DType::bf16);
  spec.block_size = 0;
  EXPECT_EQ(error_of([&] { spec.max_num_blocks_per_req(4096); }),
            "KV cache spec: block size 0 must be positive");
  EXPECT_EQ(error_of([&] { spec.max_memory_usage_bytes(memory_config()); }),
            "KV cache spec: block size 0 must be positive");
}

TEST(KVCacheSpecTest, SpecsHashAlikeWhenEqual) {
  const KVCacheSpecHash hash;
  EXPECT_EQ(hash(KVCacheSpec::full(16, 8, 64, DType::bf16)),
            hash(KVCacheSpec::full(16, 8, 64, DType::bf16, 64)));
  EXPECT_NE(hash(KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1024)),
            hash(KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1025)));
}

}  // namespace
}  // namespace attnrt
