// Per-request state shapes of state layers on vLLM's numbers (MambaStateShapeCalculator): the
// Nemotron-H, Qwen3-Next, Jamba and Granite 4 configs, vLLM's Qwen3.5 test specs, and the
// tensor-parallel division rules.

#include "attnrt/kv/state_shapes.h"

#include <gtest/gtest.h>

#include <vector>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

constexpr StateDtypes kBf16{DType::bf16, DType::bf16};

TEST(StateShapes, NemotronH56BMamba2WithAnFp32SsmState) {
  // nemotron-h-56b-base-8k.json: mamba_num_heads 256, mamba_head_dim 64, n_groups 8,
  // ssm_state_size 256, conv_kernel 4; vLLM keeps Nemotron-H's SSM state in fp32.
  const Mamba2Dims dims{256 * 64, 8, 256, 64, 256, 4};
  const std::vector<StateTensor> states = mamba2_state(dims, 1, 0, {DType::bf16, DType::f32});
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].shape, (std::vector<std::int64_t>{3, 20480}));
  EXPECT_EQ(states[1].shape, (std::vector<std::int64_t>{256, 64, 256}));
  EXPECT_EQ(states[0].bytes(), 122880);
  EXPECT_EQ(states[1].bytes(), 16777216);
  EXPECT_EQ(state_page_bytes(states), 16900096);
  EXPECT_EQ(state_page_bytes(mamba2_state(dims, 1, 0, kBf16)), 8511488);
  EXPECT_EQ(states[0].describe(), "(3, 20480) bfloat16");
}

TEST(StateShapes, Qwen3NextGatedDeltaNet) {
  // qwen3-next-80b-a3b-thinking.json: 16 key heads and 32 value heads of 128, conv kernel 4. The
  // same state is vLLM's Qwen3.5 test spec: shapes ((3, 8192), (32, 128, 128)), page 1097728.
  const GatedDeltaNetDims dims{16, 32, 128, 128, 4};
  const std::vector<StateTensor> states = gated_delta_net_state(dims, 1, 0, kBf16);
  EXPECT_EQ(states[0].shape, (std::vector<std::int64_t>{3, 8192}));
  EXPECT_EQ(states[1].shape, (std::vector<std::int64_t>{32, 128, 128}));
  EXPECT_EQ(state_page_bytes(states), 1097728);
  // A draft token adds one conv row; tensor parallelism divides channels and value heads.
  EXPECT_EQ(gated_delta_net_state(dims, 1, 2, kBf16)[0].shape,
            (std::vector<std::int64_t>{5, 8192}));
  const std::vector<StateTensor> tp4 = gated_delta_net_state(dims, 4, 0, kBf16);
  EXPECT_EQ(tp4[0].shape, (std::vector<std::int64_t>{3, 2048}));
  EXPECT_EQ(tp4[1].shape, (std::vector<std::int64_t>{8, 128, 128}));
}

TEST(StateShapes, JambaMamba1) {
  // Jamba-v0.1: hidden 4096, mamba_expand 2, mamba_d_state 16, mamba_d_conv 4.
  const std::vector<StateTensor> states = mamba1_state({2 * 4096, 16, 4}, 1, kBf16);
  EXPECT_EQ(states[0].shape, (std::vector<std::int64_t>{3, 8192}));
  EXPECT_EQ(states[1].shape, (std::vector<std::int64_t>{8192, 16}));
  EXPECT_EQ(state_page_bytes(states), 311296);
}

TEST(StateShapes, Granite4Mamba2) {
  // granite-4.0-h-tiny: hidden 1536 × expand 2, 48 heads of 64, d_state 128, 1 group; -small:
  // hidden 4096, 128 heads.
  EXPECT_EQ(state_page_bytes(mamba2_state({3072, 1, 48, 64, 128, 4}, 1, 0, kBf16)), 806400);
  EXPECT_EQ(state_page_bytes(mamba2_state({8192, 1, 128, 64, 128, 4}, 1, 0, kBf16)), 2147840);
}

TEST(StateShapes, GroupsThatDoNotSplitAreReplicatedPerRank) {
  // One group across 4 ranks becomes 4 groups: conv channels (I + 2·4·state) / 4.
  const std::vector<StateTensor> states = mamba2_state({3072, 1, 48, 64, 128, 4}, 4, 0, kBf16);
  EXPECT_EQ(states[0].shape, (std::vector<std::int64_t>{3, (3072 + 2 * 4 * 128) / 4}));
  EXPECT_EQ(states[1].shape, (std::vector<std::int64_t>{12, 64, 128}));
}

TEST(StateShapes, ShortConv) {
  const std::vector<StateTensor> states = short_conv_state(1024, 3, 2, DType::bf16);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].shape, (std::vector<std::int64_t>{2, 512}));
}

TEST(StateShapes, RefusesWhatCannotBeSplitOrSized) {
  EXPECT_NE(error_of([] {
              mamba2_state({3072, 1, 48, 64, 128, 4}, 5, 0, kBf16);
            }).find("cannot be split evenly across tensor_parallel_size 5"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              gated_delta_net_state({16, 32, 128, 128, 1}, 1, 0, kBf16);
            }).find("conv_kernel must be at least 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              mamba1_state({0, 16, 4}, 1, kBf16);
            }).find("intermediate_size must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              gated_delta_net_state({16, 32, 128, 128, 4}, 1, -1, kBf16);
            }).find("num_speculative_tokens must not be negative"),
            std::string::npos);
  // A product beyond 64 bits is refused, not wrapped.
  const StateTensor huge{{1LL << 40, 1LL << 40}, DType::f32};
  EXPECT_NE(error_of([&] { (void)huge.bytes(); }).find("does not fit in 64 bits"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
