// vLLM's hybrid block-size alignment: the attention block size raised until an attention page
// holds a state page, the state page padded to it, and vLLM's two log texts. Numbers from vLLM's
// test_align_hybrid_block_size_is_stable_across_tp (tp 1) and from the Nemotron-H, Qwen3-Next,
// Jamba and Granite 4 configs.

#include "attnrt/kv/hybrid_block_size.h"

#include <gtest/gtest.h>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

// 2 · kv_heads · head_size · dtype size: one token of one attention layer.
constexpr std::int64_t attention_bytes(int kv_heads, int head_size, int dtype_bytes) {
  return 2LL * kv_heads * head_size * dtype_bytes;
}

TEST(HybridBlockSize, VllmTestCaseAtTensorParallelOne) {
  // Backend MultipleOf(32), block size 32, fp16, head 64, 2 KV heads; state 16388 fp16 values.
  const HybridBlockSize result = align_hybrid_block_size(32, 32, attention_bytes(2, 64, 2), 32776);
  EXPECT_EQ(result.attention_bytes_per_token, 512);
  EXPECT_EQ(result.block_size, 96);
  EXPECT_EQ(result.page_size_bytes, 96 * 512);
}

TEST(HybridBlockSize, NemotronH56B) {
  const HybridBlockSize result =
      align_hybrid_block_size(16, 16, attention_bytes(8, 128, 2), 16900096);
  EXPECT_EQ(result.block_size, 4128);
  EXPECT_EQ(result.page_size_bytes, 16908288);
  EXPECT_EQ(result.padding_bytes(), 8192);
  EXPECT_TRUE(result.raised());
  EXPECT_EQ(result.block_size_message().value(),
            "Setting attention block size to 4128 tokens to ensure that attention page size is >= "
            "mamba page size.");
  EXPECT_EQ(result.padding_message().value(),
            "Padding mamba page size by 0.05% to ensure that mamba page size and attention page "
            "size are exactly equal.");
  // With a bf16 SSM state (--mamba-ssm-cache-dtype bfloat16).
  const HybridBlockSize bf16 = align_hybrid_block_size(16, 16, 4096, 8511488);
  EXPECT_EQ(bf16.block_size, 2080);
  EXPECT_EQ(bf16.page_size_bytes, 8519680);
}

TEST(HybridBlockSize, Qwen3NextJambaAndGranite4) {
  const HybridBlockSize qwen = align_hybrid_block_size(16, 16, attention_bytes(2, 256, 2), 1097728);
  EXPECT_EQ(qwen.block_size, 544);
  EXPECT_EQ(qwen.padding_bytes(), 16384);
  EXPECT_EQ(qwen.padding_message().value().substr(0, 32), "Padding mamba page size by 1.49%");
  const HybridBlockSize jamba = align_hybrid_block_size(16, 16, attention_bytes(8, 128, 2), 311296);
  EXPECT_EQ(jamba.block_size, 80);
  EXPECT_EQ(jamba.page_size_bytes, 327680);
  EXPECT_EQ(jamba.padding_message().value().substr(0, 32), "Padding mamba page size by 5.26%");
  const HybridBlockSize tiny = align_hybrid_block_size(16, 16, attention_bytes(4, 128, 2), 806400);
  EXPECT_EQ(tiny.block_size, 400);
  EXPECT_EQ(tiny.page_size_bytes, 819200);
  const HybridBlockSize small =
      align_hybrid_block_size(16, 16, attention_bytes(8, 128, 2), 2147840);
  EXPECT_EQ(small.block_size, 528);
}

TEST(HybridBlockSize, KeepsALargerRequestAndSaysNothingWhenNothingChanges) {
  // A state page that fits a 16-token page exactly: no raise, no padding, no messages.
  const HybridBlockSize exact = align_hybrid_block_size(16, 16, 1024, 16 * 1024);
  EXPECT_FALSE(exact.raised());
  EXPECT_EQ(exact.padding_bytes(), 0);
  EXPECT_FALSE(exact.block_size_message().has_value());
  EXPECT_FALSE(exact.padding_message().has_value());
  // A requested block size above the alignment is the grain.
  const HybridBlockSize large = align_hybrid_block_size(64, 16, 1024, 100 * 1024);
  EXPECT_EQ(large.alignment, 64);
  EXPECT_EQ(large.block_size, 128);
}

TEST(HybridBlockSize, RefusesNonPositiveAndOversizedInputs) {
  EXPECT_NE(error_of([] { align_hybrid_block_size(0, 16, 1024, 1024); }).find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([] { align_hybrid_block_size(16, 16, 0, 1024); }).find("must be positive"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { align_hybrid_block_size(16, 16, 1, 1LL << 40); }).find("hybrid block size"),
      std::string::npos);
}

}  // namespace
}  // namespace attnrt
