// The arithmetic a decode case does per KV byte, which places its roofline: 2·(Hq/Hkv) FMA-peak
// FLOPs per element over the element size, halved for bf16 dot products.

#include <gtest/gtest.h>

#include "bench/bench_attention.h"

namespace attnrt::cli {
namespace {

AttentionBenchCase decode(int q_heads, int kv_heads, DType dtype) {
  return {BenchKind::decode, 8, 4096, 128, q_heads, kv_heads, dtype};
}

TEST(BenchRooflineTest, FlopPerKVByteFollowsGroupSizeAndElementSize) {
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(32, 8, DType::f16), false), 4.0);
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(8, 8, DType::f16), false), 1.0);
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(32, 8, DType::f32), false), 2.0);
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(32, 8, DType::fp8_e4m3), false), 8.0);
}

TEST(BenchRooflineTest, Bf16DotProductsHalveTheCostOfBf16CachesOnly) {
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(32, 8, DType::bf16), false), 4.0);
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(32, 8, DType::bf16), true), 2.0);
  EXPECT_DOUBLE_EQ(decode_flop_per_byte(decode(32, 8, DType::f16), true), 4.0);
}

}  // namespace
}  // namespace attnrt::cli
