// BatchExecutionDescriptor (SEMANTICS §2.1), the compatibility predicate (§2.2) one condition at a
// time, and uniform-decode detection (§2.8).

#include "attnrt/runner/batch_descriptor.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace attnrt {
namespace {

using M = CUDAGraphMode;

// FULL, 48 tokens, 8 requests of 6 tokens each.
BatchExecutionDescriptor uniform_graph() {
  BatchExecutionDescriptor d;
  d.cg_mode = M::FULL;
  d.num_tokens = 48;
  d.num_reqs = 8;
  d.uniform_token_count = 6;
  return d;
}

// A decode step that fits uniform_graph(): 5 requests × 6 tokens.
RuntimeBatch decode_batch() {
  return RuntimeBatch{5, 30, 6, 0, 6, 1};
}

TEST(BatchExecutionDescriptorTest, DescribeReadsLikeVllmRepr) {
  EXPECT_EQ(uniform_graph().describe(),
            "BatchExecutionDescriptor(cg_mode=FULL, num_tokens=48, num_reqs=8, "
            "uniform_token_count=6, max_query_len=None, num_active_loras=0, "
            "exact_num_tokens=False, num_ubatches=1)");
  EXPECT_EQ(BatchExecutionDescriptor::eager(3, 17, 2).describe(),
            "BatchExecutionDescriptor(cg_mode=NONE, num_tokens=17, num_reqs=3, "
            "uniform_token_count=None, max_query_len=None, num_active_loras=2, "
            "exact_num_tokens=False, num_ubatches=1)");
}

TEST(BatchExecutionDescriptorTest, EqualityAndHashCoverEveryField) {
  std::unordered_set<BatchExecutionDescriptor> keys;
  const BatchExecutionDescriptor base = uniform_graph();
  keys.insert(base);
  std::vector<BatchExecutionDescriptor> variants(8, base);
  variants[0].cg_mode = M::PIECEWISE;
  variants[1].num_tokens = 49;
  variants[2].num_reqs = std::nullopt;
  variants[3].uniform_token_count = std::nullopt;
  variants[4].max_query_len = 6;
  variants[5].num_active_loras = 1;
  variants[6].exact_num_tokens = true;
  variants[7].num_ubatches = 2;
  for (const BatchExecutionDescriptor& variant : variants) {
    EXPECT_NE(variant, base);
    keys.insert(variant);
  }
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_TRUE(keys.contains(uniform_graph()));
}

TEST(IsCompatibleTest, EachConditionAlone) {
  const BatchExecutionDescriptor graph = uniform_graph();
  EXPECT_TRUE(is_compatible(graph, decode_batch()));

  RuntimeBatch batch = decode_batch();
  batch.uniform_token_count = 5;  // another decode width
  EXPECT_FALSE(is_compatible(graph, batch));
  batch.uniform_token_count = std::nullopt;  // not a uniform batch
  EXPECT_FALSE(is_compatible(graph, batch));

  batch = decode_batch();
  batch.num_reqs = 9;  // more requests than the graph pads to
  EXPECT_FALSE(is_compatible(graph, batch));
  batch.num_reqs = 8;
  EXPECT_TRUE(is_compatible(graph, batch));

  batch = decode_batch();
  batch.num_tokens = 49;
  EXPECT_FALSE(is_compatible(graph, batch));
  batch.num_tokens = 48;
  EXPECT_TRUE(is_compatible(graph, batch));

  batch = decode_batch();
  batch.num_active_loras = 1;
  EXPECT_FALSE(is_compatible(graph, batch));

  batch = decode_batch();
  batch.num_ubatches = 2;
  EXPECT_FALSE(is_compatible(graph, batch));
}

TEST(IsCompatibleTest, BoundedGraphsNeedATrackedLength) {
  BatchExecutionDescriptor graph;
  graph.cg_mode = M::FULL;
  graph.num_tokens = 16;
  graph.num_reqs = 4;
  graph.max_query_len = 4;
  RuntimeBatch batch{3, 10, std::nullopt, 0, 4, 1};
  EXPECT_TRUE(is_compatible(graph, batch));
  batch.max_query_len = 5;
  EXPECT_FALSE(is_compatible(graph, batch));
  batch.max_query_len = std::nullopt;
  EXPECT_FALSE(is_compatible(graph, batch));
}

TEST(IsCompatibleTest, ExactGraphsServeOneSize) {
  BatchExecutionDescriptor graph;
  graph.cg_mode = M::PIECEWISE;
  graph.num_tokens = 24;
  graph.exact_num_tokens = true;
  EXPECT_TRUE(is_compatible(graph, RuntimeBatch{1, 24, std::nullopt, 0, 24, 1}));
  EXPECT_FALSE(is_compatible(graph, RuntimeBatch{1, 23, std::nullopt, 0, 23, 1}));
  graph.exact_num_tokens = false;  // unbounded request count: any number of requests
  EXPECT_TRUE(is_compatible(graph, RuntimeBatch{23, 23, std::nullopt, 0, 1, 1}));
}

TEST(UniformDecodeTest, UniformQueryLen) {
  EXPECT_TRUE(is_uniform_query_len(4, 12, 3));
  EXPECT_FALSE(is_uniform_query_len(4, 11, 3));
  EXPECT_FALSE(is_uniform_query_len(0, 0, 0));  // an empty batch is not uniform
  EXPECT_TRUE(is_uniform_query_len(1, 7, 7));   // one request always is
}

TEST(UniformDecodeTest, PrefillIsNeverADecode) {
  EXPECT_EQ(get_uniform_decode_token_count(4, 12, 3, false), 3);
  EXPECT_EQ(get_uniform_decode_token_count(4, 12, 3, true), std::nullopt);
  EXPECT_EQ(get_uniform_decode_token_count(4, 11, 3, false), std::nullopt);
  EXPECT_EQ(get_uniform_decode_token_count(8, 8, 1, false), 1);
}

}  // namespace
}  // namespace attnrt
