// check_batch_fits: the replay-side guard (attnrt's addition). Every condition of SEMANTICS §2.2
// is refused with a message naming it, and whatever dispatch answers always fits.

#include "attnrt/runner/replay_check.h"

#include <gtest/gtest.h>

#include <string>

#include "attnrt/core/error.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "runner_test_helpers.h"

namespace attnrt {
namespace {

using testing::error_of;
using testing::Flags;
using testing::graph;
using testing::I32;
using testing::I64;
using testing::vec;

void expect_refused(const BatchExecutionDescriptor& d, const RuntimeBatch& batch,
                    const std::string& reason) {
  const std::string message = error_of([&] { check_batch_fits(d, batch); });
  EXPECT_NE(message.find(reason), std::string::npos) << message;
  EXPECT_NE(message.find(d.describe()), std::string::npos) << message;
  EXPECT_NE(message.find("CudaGraphManager::dispatch"), std::string::npos) << message;
}

BatchExecutionDescriptor full(int tokens, int reqs) {
  return graph(CUDAGraphMode::FULL, tokens, reqs);
}

TEST(ReplayCheckTest, ABatchWithinEveryLimitFits) {
  BatchExecutionDescriptor d = full(16, 8);
  d.uniform_token_count = 2;
  d.num_active_loras = 2;
  EXPECT_NO_THROW(check_batch_fits(d, RuntimeBatch{7, 14, 2, 1, 2, 1}));
  EXPECT_NO_THROW(check_batch_fits(d, RuntimeBatch{8, 16, 2, 2, 2, 1}));
}

TEST(ReplayCheckTest, TokensAndRequestsMustFit) {
  expect_refused(full(16, 8), RuntimeBatch{4, 17, {}, 0, 5, 1},
                 "its 17 tokens exceed the 16 the descriptor holds");
  expect_refused(full(16, 8), RuntimeBatch{9, 9, {}, 0, 1, 1},
                 "its 9 requests exceed the 8 the graph was padded for");
  BatchExecutionDescriptor exact = graph(CUDAGraphMode::PIECEWISE, 64, 1);
  exact.max_query_len = 64;
  exact.exact_num_tokens = true;
  expect_refused(exact, RuntimeBatch{1, 60, {}, 0, 60, 1},
                 "it has 60 tokens, but the graph serves exactly 64");
  // Eager descriptors carry the batch's own size: one more token would not fit its buffers.
  expect_refused(BatchExecutionDescriptor::eager(2, 10), RuntimeBatch{2, 11, {}, 0, 6, 1},
                 "its 11 tokens exceed the 10");
}

TEST(ReplayCheckTest, UniformGraphsServeOnlyTheirQueryLength) {
  BatchExecutionDescriptor uniform = full(12, 4);
  uniform.uniform_token_count = 3;
  expect_refused(uniform, RuntimeBatch{4, 8, 2, 0, 2, 1},
                 "every request has 2 tokens, but the graph decodes 3 per request");
  expect_refused(uniform, RuntimeBatch{3, 9, {}, 0, 5, 1},
                 "its requests are not all decodes of 3 tokens");
}

TEST(ReplayCheckTest, VarlenGraphsBoundTheLongestQuery) {
  BatchExecutionDescriptor varlen = full(16, 4);
  varlen.max_query_len = 4;
  EXPECT_NO_THROW(check_batch_fits(varlen, RuntimeBatch{4, 10, {}, 0, 4, 1}));
  expect_refused(varlen, RuntimeBatch{3, 10, {}, 0, 5, 1},
                 "its longest query has 5 tokens, above the graph's bound of 4");
  expect_refused(varlen, RuntimeBatch{3, 10, {}, 0, {}, 1}, "its longest query is unknown");
}

TEST(ReplayCheckTest, LoraCaseAndMicroBatchesMustMatch) {
  BatchExecutionDescriptor piecewise = graph(CUDAGraphMode::PIECEWISE, 32);
  piecewise.num_active_loras = 2;
  expect_refused(piecewise, RuntimeBatch{2, 20, {}, 3, 10, 1},
                 "its 3 active LoRA adapters exceed the graph's LoRA case of 2");
  expect_refused(piecewise, RuntimeBatch{2, 20, {}, 2, 10, 2},
                 "it runs as 2 micro-batches, the graph as 1");
  // An eager run has no LoRA kernels to outgrow.
  EXPECT_NO_THROW(check_batch_fits(BatchExecutionDescriptor::eager(2, 20, 1),
                                   RuntimeBatch{2, 20, {}, 5, 10, 1}));
}

TEST(ReplayCheckTest, WhateverDispatchAnswersFits) {
  CudaGraphManagerOptions options;
  options.mode = CUDAGraphMode::FULL_AND_PIECEWISE;
  options.capture_sizes = {1, 2, 4, 8, 16, 32};
  options.max_num_reqs = 8;
  options.decode_query_len = 2;
  options.lora_capture_cases = {0, 2, 4};
  CudaGraphManager manager(options);
  manager.mark_captured();
  for (int num_reqs = 1; num_reqs <= 8; ++num_reqs) {
    for (int query_len = 1; query_len <= 5; ++query_len) {
      for (int loras : {0, 1, 3}) {
        for (bool prefill : {false, true}) {
          const int tokens = num_reqs * query_len;
          const std::optional<int> uniform =
              get_uniform_decode_token_count(num_reqs, tokens, query_len, prefill);
          const BatchExecutionDescriptor d =
              manager.dispatch(num_reqs, tokens, uniform, loras, query_len);
          EXPECT_NO_THROW(
              check_batch_fits(d, RuntimeBatch{num_reqs, tokens, uniform, loras, query_len, 1}))
              << d;
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnrt
