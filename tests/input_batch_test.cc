// InputBatch (SEMANTICS §2.8, §6.3): token rows, positions, seq_lens and logits indices of a
// step, and padding to a BatchExecutionDescriptor.

#include "attnrt/runner/input_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "runner_test_helpers.h"

namespace attnrt {
namespace {

using testing::error_of;
using testing::Flags;
using testing::graph;
using testing::I32;
using testing::I64;
using testing::vec;

// A chunked prefill (slot 3: 4 of a 10-token prompt after 2), a decode (slot 0: 1 token after 7)
// and a spec-decode verification (slot 5: 1 + 2 drafts after 5).
const std::vector<ScheduledRequest> kMixed = {
    {3, 2, 4, 10, 0},
    {0, 7, 1, 7, 0},
    {5, 5, 3, 4, 2},
};

TEST(InputBatchTest, MixedBatchRowsPositionsAndLogits) {
  InputBatch batch(8, 32);
  batch.prepare(kMixed);
  EXPECT_EQ(batch.num_reqs(), 3);
  EXPECT_EQ(batch.num_tokens(), 8);
  EXPECT_EQ(vec(batch.idx_mapping()), (I32{3, 0, 5}));
  EXPECT_EQ(vec(batch.query_start_loc()), (I32{0, 4, 5, 8}));
  EXPECT_EQ(vec(batch.seq_lens()), (I32{6, 8, 8}));
  EXPECT_EQ(vec(batch.positions()), (I64{2, 3, 4, 5, 7, 5, 6, 7}));
  EXPECT_EQ(vec(batch.is_padding()), (Flags(8, 0)));
  // One logits row for the prefill chunk and the decode, drafts + bonus for the verification.
  EXPECT_EQ(vec(batch.logits_indices()), (I32{3, 4, 5, 6, 7}));
  EXPECT_EQ(vec(batch.cu_num_logits()), (I32{0, 1, 2, 5}));
  EXPECT_EQ(batch.max_query_len(), 4);
  EXPECT_EQ(batch.max_seq_len(), 8);
  EXPECT_TRUE(batch.has_prefill());
  EXPECT_EQ(batch.uniform_decode_token_count(), std::nullopt);
  EXPECT_EQ(batch.num_tokens_padded(), 8);  // unpadded until pad_to
}

TEST(InputBatchTest, UniformDecodeNeedsEveryRequestDecodingAlike) {
  InputBatch batch(8, 32);
  batch.prepare(std::vector<ScheduledRequest>{{0, 9, 3, 4, 2}, {1, 6, 3, 2, 2}});
  EXPECT_FALSE(batch.has_prefill());
  EXPECT_EQ(batch.uniform_decode_token_count(), 3);
  EXPECT_EQ(vec(batch.logits_indices()), (I32{0, 1, 2, 3, 4, 5}));
  // The same shape while a prompt is still being read is not a decode.
  batch.prepare(std::vector<ScheduledRequest>{{0, 0, 3, 8, 0}, {1, 6, 3, 2, 0}});
  EXPECT_TRUE(batch.has_prefill());
  EXPECT_EQ(batch.uniform_decode_token_count(), std::nullopt);
  EXPECT_EQ(vec(batch.logits_indices()), (I32{2, 5}));
}

TEST(InputBatchTest, PiecewisePaddingPadsTokensOnly) {
  InputBatch batch(8, 32);
  batch.prepare(kMixed);
  const BatchExecutionDescriptor piecewise = graph(CUDAGraphMode::PIECEWISE, 12);
  batch.pad_to(piecewise);
  EXPECT_EQ(batch.num_reqs_padded(), 3);
  EXPECT_EQ(batch.num_tokens_padded(), 12);
  EXPECT_EQ(vec(batch.query_start_loc()), (I32{0, 4, 5, 8}));
  EXPECT_EQ(vec(batch.positions()), (I64{2, 3, 4, 5, 7, 5, 6, 7, 0, 0, 0, 0}));
  EXPECT_EQ(vec(batch.is_padding()), (Flags{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(batch.max_query_len(), 4);  // of the real requests
}

TEST(InputBatchTest, FullPaddingPadsRequestsWithEmptyQueries) {
  InputBatch batch(8, 32);
  batch.prepare(std::vector<ScheduledRequest>{{2, 9, 2, 4, 1}, {6, 3, 2, 2, 1}});
  const BatchExecutionDescriptor full = graph(CUDAGraphMode::FULL, 8, 4, 2);
  batch.pad_to(full);
  EXPECT_EQ(batch.num_reqs_padded(), 4);
  EXPECT_EQ(vec(batch.query_start_loc()), (I32{0, 2, 4, 4, 4}));
  EXPECT_EQ(vec(batch.seq_lens()), (I32{11, 5, 0, 0}));
  EXPECT_EQ(vec(batch.idx_mapping()), (I32{2, 6}));  // real requests only
  EXPECT_EQ(vec(batch.is_padding()), (Flags{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(InputBatchTest, PaddingAgainStartsFromTheRealBatch) {
  InputBatch batch(8, 32);
  batch.prepare(std::vector<ScheduledRequest>{{0, 4, 1, 2, 0}});
  batch.pad_to(graph(CUDAGraphMode::FULL, 4, 4, 1));
  batch.pad_to(BatchExecutionDescriptor::eager(1, 1));
  EXPECT_EQ(vec(batch.query_start_loc()), (I32{0, 1}));
  EXPECT_EQ(vec(batch.seq_lens()), (I32{5}));
  EXPECT_EQ(vec(batch.is_padding()), (Flags{0}));
}

TEST(InputBatchTest, ADescriptorTheBatchDoesNotFitIsRefusedAndNothingIsPadded) {
  InputBatch batch(8, 32);
  batch.prepare(kMixed);
  const std::string message = error_of([&] { batch.pad_to(graph(CUDAGraphMode::PIECEWISE, 4)); });
  EXPECT_NE(message.find("its 8 tokens exceed the 4"), std::string::npos) << message;
  EXPECT_EQ(batch.num_tokens_padded(), 8);
  const std::string too_big = error_of([&] { batch.pad_to(graph(CUDAGraphMode::PIECEWISE, 64)); });
  EXPECT_NE(too_big.find("the batch holds 8 and 32"), std::string::npos) << too_big;
}

TEST(InputBatchTest, CountsThatDoNotAddUpAreRejectedBeforeAnyChange) {
  InputBatch batch(2, 8);
  batch.prepare(std::vector<ScheduledRequest>{{0, 0, 3, 3, 0}});
  const auto rejected = [&](std::vector<ScheduledRequest> requests, const std::string& needle) {
    const std::string message = error_of([&] { batch.prepare(requests); });
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  rejected({{0, 0, 5, 5, 0}, {1, 0, 4, 4, 0}}, "9 tokens scheduled");
  rejected({{0, 0, 1, 1, 0}, {1, 0, 1, 1, 0}, {0, 0, 1, 1, 0}}, "3 requests scheduled");
  rejected({{2, 0, 1, 1, 0}}, "uses slot 2");
  rejected({{0, 4, 2, 2, 2}}, "verifies 2 drafts + 1 bonus tokens but schedules only 2");
  rejected({{0, 4, 0, 2, 0}}, "at least one token");
  // Drafts + bonus near INT_MAX would wrap negative and pass; counted in 64 bits they do not.
  rejected({{0, 0, 2, 2, 2147483647}}, "verifies 2147483647 drafts + 1 bonus tokens");
  rejected({{0, 2147483647, 1, 1, 0}}, "longer than an int32 sequence length");
  EXPECT_EQ(vec(batch.query_start_loc()), (I32{0, 3}));
}

TEST(InputBatchTest, BonusTokensWidenEveryRequestsLogits) {
  InputBatch batch(4, 16, /*num_bonus_tokens=*/2);
  batch.prepare(std::vector<ScheduledRequest>{{0, 0, 5, 5, 0}, {1, 3, 3, 1, 1}});
  EXPECT_EQ(vec(batch.logits_indices()), (I32{3, 4, 5, 6, 7}));
  EXPECT_EQ(vec(batch.cu_num_logits()), (I32{0, 2, 5}));
}

}  // namespace
}  // namespace attnrt
