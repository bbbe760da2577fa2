// Capture sizes (SEMANTICS §2.3) and LoRA case mapping (§2.4); expected lists written out by hand.

#include "attnrt/runner/capture_sizes.h"

#include <gtest/gtest.h>

#include <limits>

#include "attnrt/config/cg_support.h"
#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;
constexpr int kIntMax = std::numeric_limits<int>::max();

std::vector<int> range(int first, int last, int step) {
  std::vector<int> values;
  for (int value = first; value <= last; value += step) values.push_back(value);
  return values;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

SchedulerConfig scheduler(int max_num_seqs, int max_num_batched_tokens) {
  SchedulerConfig config;
  config.max_num_seqs = max_num_seqs;
  config.max_num_batched_tokens = max_num_batched_tokens;
  return config;
}

TEST(CaptureSizesTest, DefaultCapIsTwiceTheDecodeTokens) {
  // min(128 × 1 × 2, 512) = 256: [1, 2, 4], 8..248 step 8, then 256.
  const CaptureSizes sizes = compute_capture_sizes({}, scheduler(128, 2048), 1);
  EXPECT_EQ(sizes.sizes, concat(concat({1, 2, 4}, range(8, 248, 8)), {256}));
  EXPECT_EQ(sizes.sizes.size(), 35u);
  EXPECT_EQ(sizes.max_capture_size, 256);
}

TEST(CaptureSizesTest, SpecDecodeWidensTheCapUpTo512) {
  // min(128 × 4 × 2, 512) = 512: above 256 the step is 16.
  const CaptureSizes sizes = compute_capture_sizes({}, scheduler(128, 2048), 4);
  EXPECT_EQ(sizes.sizes, concat(concat({1, 2, 4}, range(8, 248, 8)), range(256, 512, 16)));
  EXPECT_EQ(sizes.sizes.size(), 51u);
  EXPECT_EQ(sizes.max_capture_size, 512);
}

TEST(CaptureSizesTest, SmallCap) {
  // min(8 × 1 × 2, 512) = 16.
  EXPECT_EQ(compute_capture_sizes({}, scheduler(8, 2048), 1).sizes,
            (std::vector<int>{1, 2, 4, 8, 16}));
  // min(1 × 1 × 2, 512) = 2.
  EXPECT_EQ(compute_capture_sizes({}, scheduler(1, 2048), 1).sizes, (std::vector<int>{1, 2}));
}

TEST(CaptureSizesTest, CapClampedToBatchedTokensAddsThatSize) {
  // min(64 × 2, 512) = 128, clamped to 100: 8..96, then 100 itself gets a graph.
  const CaptureSizes sizes = compute_capture_sizes({}, scheduler(64, 100), 1);
  EXPECT_EQ(sizes.sizes, concat(concat({1, 2, 4}, range(8, 96, 8)), {100}));
  EXPECT_EQ(sizes.max_capture_size, 100);
  // Clamped to 256, which the ladder already holds: not added twice.
  const CaptureSizes ladder = compute_capture_sizes({}, scheduler(256, 256), 1);
  EXPECT_EQ(ladder.sizes, concat(concat({1, 2, 4}, range(8, 248, 8)), {256}));
}

TEST(CaptureSizesTest, ExplicitMaxCaptureSize) {
  CompilationConfig compilation;
  compilation.max_capture_size = 40;
  EXPECT_EQ(compute_capture_sizes(compilation, scheduler(128, 2048), 1).sizes,
            (std::vector<int>{1, 2, 4, 8, 16, 24, 32, 40}));
  // 300 is not on the step-16 ladder: the last size is 288.
  compilation.max_capture_size = 300;
  const CaptureSizes sizes = compute_capture_sizes(compilation, scheduler(128, 2048), 1);
  EXPECT_EQ(sizes.sizes, concat(concat({1, 2, 4}, range(8, 248, 8)), {256, 272, 288}));
  EXPECT_EQ(sizes.max_capture_size, 288);
}

TEST(CaptureSizesTest, UserListDedupedFilteredSorted) {
  CompilationConfig compilation;
  compilation.capture_sizes = {8, 4, 4, 1, 4096, 16};
  const CaptureSizes sizes = compute_capture_sizes(compilation, scheduler(128, 2048), 1);
  EXPECT_EQ(sizes.sizes, (std::vector<int>{1, 4, 8, 16}));  // 4096 > 2048 dropped
  EXPECT_EQ(sizes.max_capture_size, 16);
}

TEST(CaptureSizesTest, UserListAndMaxMustAgree) {
  CompilationConfig compilation;
  compilation.capture_sizes = {1, 2, 64};
  compilation.max_capture_size = 64;
  EXPECT_EQ(compute_capture_sizes(compilation, scheduler(128, 2048), 1).max_capture_size, 64);
  compilation.max_capture_size = 32;
  try {
    compute_capture_sizes(compilation, scheduler(128, 2048), 1);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "compilation.max_capture_size 32 disagrees with the largest of "
                 "compilation.capture_sizes (64); set only one of them, or make them agree");
  }
}

TEST(CaptureSizesTest, NoneModeCapturesNothing) {
  CompilationConfig compilation;
  compilation.cudagraph_mode = CUDAGraphMode::NONE;
  compilation.capture_sizes = {1, 2, 4};
  const CaptureSizes sizes = compute_capture_sizes(compilation, scheduler(128, 2048), 1);
  EXPECT_TRUE(sizes.sizes.empty());
  EXPECT_EQ(sizes.max_capture_size, 0);
}

TEST(CaptureSizesTest, EngineConfigUsesSpeculativeWidth) {
  EngineConfig config;
  config.scheduler = scheduler(16, 2048);
  config.speculative.num_speculative_tokens = 3;
  // min(16 × 4 × 2, 512) = 128.
  const CaptureSizes sizes = compute_capture_sizes(config);
  EXPECT_EQ(sizes.sizes, concat({1, 2, 4}, range(8, 128, 8)));
  EXPECT_EQ(sizes.max_capture_size, 128);
}

TEST(CaptureSizesTest, MaxCaptureSizeOfIntMaxIsClampedWithoutWrapping) {
  CompilationConfig compilation;
  compilation.max_capture_size = kIntMax;
  const CaptureSizes sizes = compute_capture_sizes(compilation, scheduler(128, 4096), 1);
  EXPECT_EQ(sizes.max_capture_size, 4096);    // the step-16 ladder reaches 4096 itself
  EXPECT_EQ(sizes.sizes.size(), 35u + 240u);  // ..256, then 272..4096 step 16
}

TEST(CaptureSizesTest, TheLargestConfigCapGeneratesItsWholeLadder) {
  CompilationConfig compilation;
  compilation.max_capture_size = 1 << 21;
  const CaptureSizes sizes = compute_capture_sizes(compilation, scheduler(128, 1 << 21), 1);
  EXPECT_EQ(sizes.max_capture_size, 1 << 21);
  EXPECT_EQ(sizes.sizes.size(), 35u + ((1u << 21) - 256) / 16);
}

TEST(CaptureSizesTest, ACapNearIntMaxIsRefusedNamingItsSources) {
  CompilationConfig compilation;
  compilation.max_capture_size = kIntMax;
  const std::string message =
      error_of([&] { compute_capture_sizes(compilation, scheduler(128, kIntMax), 1); });
  EXPECT_NE(message.find("scheduler.max_num_batched_tokens 2147483647"), std::string::npos)
      << message;
  EXPECT_NE(message.find("compilation.max_capture_size"), std::string::npos) << message;
}

TEST(CaptureSizesTest, DefaultCapProductPastIntMaxStaysAt512) {
  // 2^20 seqs × 2^12 × 2 = 2^33 would wrap an int; the min with 512 still applies.
  EXPECT_EQ(compute_capture_sizes({}, scheduler(1 << 20, 2048), 1 << 12).max_capture_size, 512);
}

TEST(CaptureSizesTest, DecodeQueryLengthIsCheckedOneMoreThanTheDrafts) {
  EngineConfig config;
  config.speculative.num_speculative_tokens = kIntMax;
  EXPECT_NE(error_of([&] {
              compute_capture_sizes(config);
            }).find("decode query length (1 + speculative.num_speculative_tokens)"),
            std::string::npos);
  config.speculative.num_speculative_tokens = -1;
  EXPECT_NE(error_of([&] {
              compute_capture_sizes(config);
            }).find("speculative.num_speculative_tokens: must not be negative"),
            std::string::npos);
  config.speculative.num_speculative_tokens = kIntMax - 1;
  EXPECT_EQ(max_decode_query_len(config.speculative), kIntMax);
}

TEST(LoRACaseMapTest, SemanticsExamples) {
  const std::vector<int> cases = {0, 1, 2, 4, 8};
  const LoRACaseMap map(cases);
  EXPECT_EQ(map.map(1), 1);
  EXPECT_EQ(map.map(3), 4);
  EXPECT_EQ(map.map(5), 8);
  EXPECT_EQ(map.map(8), 8);
  EXPECT_EQ(map.map(12), 8);
  EXPECT_EQ(map.map(0), 0);
  EXPECT_EQ(map.map(-1), -1);
}

TEST(LoRACaseMapTest, OnlyZeroPassesEveryCountThrough) {
  const std::vector<int> cases = {0};
  const LoRACaseMap map(cases);
  EXPECT_EQ(map.map(0), 0);
  EXPECT_EQ(map.map(3), 3);
  EXPECT_EQ(LoRACaseMap(std::vector<int>{}).map(2), 2);
}

TEST(LoRACaseMapTest, UnsortedAndRepeatedCases) {
  const std::vector<int> cases = {4, 2, 0, 2};
  const LoRACaseMap map(cases);
  EXPECT_EQ(map.map(1), 2);
  EXPECT_EQ(map.map(3), 4);
  EXPECT_EQ(map.map(9), 4);
}

}  // namespace
}  // namespace attnrt
