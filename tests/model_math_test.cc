// The built-in transformer's dense kernels on values computed by hand.

#include "attnrt/engine/model_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

WeightMatrix matrix(DType dtype, const std::vector<std::vector<float>>& rows) {
  WeightMatrix w(dtype, static_cast<int>(rows.size()), static_cast<int>(rows[0].size()));
  for (int r = 0; r < w.rows(); ++r) {
    for (int c = 0; c < w.cols(); ++c) w.set(r, c, rows[r][c]);
  }
  return w;
}

TEST(ModelMathTest, MatmulMultipliesRowsByTheWeights) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const WeightMatrix w = matrix(DType::f32, {{1, 0}, {0, 1}, {1, 1}});
  std::vector<float> out(4, -1.f);
  matmul({x.data(), 2, 3}, w, {out.data(), 2, 2});
  EXPECT_EQ(out, (std::vector<float>{4, 5, 10, 11}));
  matmul({x.data(), 2, 3}, w, {out.data(), 2, 2}, /*accumulate=*/true);
  EXPECT_EQ(out, (std::vector<float>{8, 10, 20, 22}));
}

TEST(ModelMathTest, MatmulTilesGiveTheNaiveSumsExactly) {
  // 11 rows and 300 columns cross the 8-row and 256-column tile edges.
  const int rows = 11, inner = 5, cols = 300;
  std::vector<float> x(rows * inner);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
  WeightMatrix w(DType::f32, inner, cols);
  for (int i = 0; i < inner; ++i) {
    for (int c = 0; c < cols; ++c) w.set(i, c, std::cos(0.3f * static_cast<float>(i * cols + c)));
  }
  std::vector<float> out(rows * cols);
  matmul({x.data(), rows, inner}, w, {out.data(), rows, cols});
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      float sum = 0.f;
      for (int i = 0; i < inner; ++i) sum += x[r * inner + i] * w.get(i, c);
      ASSERT_EQ(out[r * cols + c], sum) << r << ", " << c;
    }
  }
}

TEST(ModelMathTest, MatmulGivesTheSameBitsOnAnyNumberOfThreads) {
  const int rows = 70, inner = 64, cols = 300;  // 1.3M multiply-adds: large enough to split
  std::vector<float> x(rows * inner);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  WeightMatrix w(DType::bf16, inner, cols);
  for (int i = 0; i < inner; ++i) {
    for (int c = 0; c < cols; ++c) w.set(i, c, std::cos(0.11f * static_cast<float>(i * cols + c)));
  }
  std::vector<float> one(rows * cols), two(rows * cols);
  matmul({x.data(), rows, inner}, w, {one.data(), rows, cols}, false, 1);
  matmul({x.data(), rows, inner}, w, {two.data(), rows, cols}, false, 2);
  EXPECT_EQ(one, two);
}

TEST(ModelMathTest, Bf16WeightsRoundToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7: ties go to the even mantissa, 1.
  const WeightMatrix w = matrix(DType::bf16, {{1.00390625f, 1.01171875f}});
  EXPECT_EQ(w.get(0, 0), 1.f);
  EXPECT_EQ(w.get(0, 1), 1.015625f);  // 1 + 3·2^-8 ties up to 1 + 2^-6
  std::vector<float> x = {2.f};
  std::vector<float> out(2);
  matmul({x.data(), 1, 1}, w, {out.data(), 1, 2});
  EXPECT_EQ(out, (std::vector<float>{2.f, 2.03125f}));
  EXPECT_THROW(WeightMatrix(DType::f16, 1, 1), Error);
}

TEST(ModelMathTest, RmsNormScalesRowsToUnitRms) {
  // mean(3², 4²) = 12.5, rms = 3.5355339
  std::vector<float> x = {3, 4};
  const std::vector<float> gain = {1, 2};
  std::vector<float> out(2);
  rms_norm({x.data(), 1, 2}, gain, 0.f, {out.data(), 1, 2});
  EXPECT_NEAR(out[0], 0.8485281f, 1e-6f);
  EXPECT_NEAR(out[1], 2.2627417f, 1e-6f);
}

TEST(ModelMathTest, RotaryTurnsPairsByPositionTimesFrequency) {
  // Two tokens of one head [1, 2, 3, 4]; dim 4 pairs (0, 2) at frequency 1 and (1, 3) at
  // 10000^(-1/2) = 0.01.
  std::vector<float> rows = {1, 2, 3, 4, 1, 2, 3, 4};
  const std::vector<std::int64_t> positions = {0, 1};
  apply_rotary({rows.data(), 2, 1, 4, 4, 4}, positions, 0, 4, 10000.0);
  EXPECT_EQ(std::vector<float>(rows.begin(), rows.begin() + 4), (std::vector<float>{1, 2, 3, 4}));
  const float c1 = std::cos(1.f), s1 = std::sin(1.f);
  const float c2 = std::cos(0.01f), s2 = std::sin(0.01f);
  EXPECT_NEAR(rows[4], 1 * c1 - 3 * s1, 1e-6f);
  EXPECT_NEAR(rows[5], 2 * c2 - 4 * s2, 1e-6f);
  EXPECT_NEAR(rows[6], 3 * c1 + 1 * s1, 1e-6f);
  EXPECT_NEAR(rows[7], 4 * c2 + 2 * s2, 1e-6f);
}

TEST(ModelMathTest, RotaryLeavesEntriesOutsideItsRangeAlone) {
  // MLA-style: only entries [2, 4) turn, by position 2 x frequency 1.
  std::vector<float> rows = {5, 6, 1, 0};
  const std::vector<std::int64_t> positions = {2};
  apply_rotary({rows.data(), 1, 1, 4, 4, 4}, positions, 2, 2, 10000.0);
  EXPECT_EQ(rows[0], 5.f);
  EXPECT_EQ(rows[1], 6.f);
  EXPECT_NEAR(rows[2], std::cos(2.f), 1e-6f);
  EXPECT_NEAR(rows[3], std::sin(2.f), 1e-6f);
}

TEST(ModelMathTest, SwigluGatesTheUpProjection) {
  // silu(0) = 0, silu(1) = 1 / (1 + e^-1) = 0.7310586
  std::vector<float> gate_up = {0, 1, 5, 2};
  std::vector<float> out(2);
  swiglu({gate_up.data(), 1, 4}, 2, {out.data(), 1, 2});
  EXPECT_EQ(out[0], 0.f);
  EXPECT_NEAR(out[1], 1.4621172f, 1e-6f);
}

TEST(ModelMathTest, GreedyTokenTakesTheFirstLargest) {
  const std::vector<float> logits = {0.5f, 2.f, 2.f, -1.f};
  EXPECT_EQ(greedy_token(logits), 1);
  EXPECT_THROW(greedy_token({}), Error);
}

}  // namespace
}  // namespace attnrt
