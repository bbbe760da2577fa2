// FastPrefillHelper::prepare (SEMANTICS §6.4, §8.4): when it stages the logits rows, how it pads
// them, and which LoRA case it dispatches the reduced batch with.

#include "attnrt/runner/fast_prefill_helper.h"

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

// §8.4's fake manager: without LoRA a PIECEWISE graph of 8 tokens; with LoRA eager, unpadded.
class FakeManager : public GraphDispatcher {
 public:
  BatchExecutionDescriptor dispatch(int num_reqs, int num_tokens, std::optional<int> uniform,
                                    int num_active_loras) const override {
    ++num_calls;
    last_num_active_loras = num_active_loras;
    last_uniform = uniform;
    if (num_active_loras == 0) return graph(CUDAGraphMode::PIECEWISE, 8);
    return BatchExecutionDescriptor::eager(num_reqs, num_tokens, num_active_loras);
  }
  mutable int num_calls = 0;
  mutable int last_num_active_loras = -1;
  mutable std::optional<int> last_uniform = -1;
};

I32 iota(int n) {
  I32 values(n);
  for (int i = 0; i < n; ++i) values[i] = i;
  return values;
}

BatchExecutionDescriptor eager(int num_tokens, int loras = 0, int ubatches = 1) {
  return BatchExecutionDescriptor::eager(1, num_tokens, loras, ubatches);
}

TEST(FastPrefillHelperTest, LoraBatchesDispatchWithTheirLoraCount) {
  // SEMANTICS §8.4: every n × loras ∈ {1, 2, 4} keeps its n rows unpadded.
  for (int n : {1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128}) {
    for (int loras : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << ", loras " << loras);
      FakeManager manager;
      FastPrefillHelper helper(std::max(32, n), manager);
      const I32 logits = iota(n);
      const I32 cu_num_logits = {0, n};
      const auto md = helper.prepare(logits, 1, cu_num_logits, true, eager(n, loras), loras);
      ASSERT_TRUE(md.has_value());
      EXPECT_EQ(md->num_logits_indices, n);
      EXPECT_EQ(static_cast<int>(md->logits_indices_padded.size()), n);
      EXPECT_EQ(md->max_logits_per_req, n);
      EXPECT_EQ(manager.last_num_active_loras, loras);
      EXPECT_EQ(manager.last_uniform, std::nullopt);
      EXPECT_EQ(I32(md->logits_indices_padded.begin(), md->logits_indices_padded.end()), logits);
    }
  }
}

TEST(FastPrefillHelperTest, PadsToTheGraphSizeRepeatingTheLastIndex) {
  FakeManager manager;
  FastPrefillHelper helper(32, manager);
  const I32 logits = {4, 9, 17};
  const auto md = helper.prepare(logits, 3, I32{0, 1, 2, 3}, true, eager(18));
  ASSERT_TRUE(md.has_value());
  EXPECT_EQ(I32(md->logits_indices_padded.begin(), md->logits_indices_padded.end()),
            (I32{4, 9, 17, 17, 17, 17, 17, 17}));
  EXPECT_EQ(md->num_logits_indices, 3);
  EXPECT_EQ(md->max_logits_per_req, 1);
  EXPECT_EQ(manager.last_num_active_loras, 0);
}

TEST(FastPrefillHelperTest, PaddedSizeIsClampedToTheBuffer) {
  FakeManager manager;  // answers 8 tokens
  FastPrefillHelper helper(5, manager);
  const auto md = helper.prepare(I32{0, 1, 2}, 1, I32{0, 3}, true, eager(3));
  ASSERT_TRUE(md.has_value());
  EXPECT_EQ(I32(md->logits_indices_padded.begin(), md->logits_indices_padded.end()),
            (I32{0, 1, 2, 2, 2}));
}

TEST(FastPrefillHelperTest, NoPrefillFullGraphsAndMicroBatchesGetNone) {
  FakeManager manager;
  FastPrefillHelper helper(32, manager);
  const I32 logits = {0, 1};
  const I32 cu = {0, 1, 2};
  EXPECT_FALSE(helper.prepare(logits, 2, cu, false, eager(2)).has_value());
  EXPECT_FALSE(helper.prepare(logits, 2, cu, true, graph(CUDAGraphMode::FULL, 8, 8)).has_value());
  EXPECT_FALSE(helper.prepare(logits, 2, cu, true, eager(2, 0, 2)).has_value());
  EXPECT_EQ(manager.num_calls, 0);
  EXPECT_TRUE(helper.prepare(logits, 2, cu, true, graph(CUDAGraphMode::PIECEWISE, 8)).has_value());
}

TEST(FastPrefillHelperTest, MaxLogitsPerRequestComesFromTheHostCuNumLogits) {
  FakeManager manager;
  FastPrefillHelper helper(32, manager);
  // Requests with 1, 4 and 2 logits rows (drafts + bonus); entries past num_reqs are ignored.
  const auto md =
      helper.prepare(I32{3, 5, 6, 7, 8, 10, 11}, 3, I32{0, 1, 5, 7, 100}, true, eager(12));
  ASSERT_TRUE(md.has_value());
  EXPECT_EQ(md->max_logits_per_req, 4);
  EXPECT_EQ(md->num_logits_indices, 7);
}

TEST(FastPrefillHelperTest, ARealManagerPadsOnlyAfterCapture) {
  CudaGraphManagerOptions options;
  options.mode = CUDAGraphMode::PIECEWISE;
  options.capture_sizes = {4, 8, 16};
  options.max_num_reqs = 8;
  CudaGraphManager manager(options);
  FastPrefillHelper helper(12, manager);
  const I32 logits = {2, 6, 9};
  const I32 cu = {0, 1, 2, 3};
  EXPECT_EQ(helper.prepare(logits, 3, cu, true, eager(10))->logits_indices_padded.size(), 3u);
  manager.mark_captured();
  EXPECT_EQ(helper.prepare(logits, 3, cu, true, eager(10))->logits_indices_padded.size(), 4u);
  const I32 nine = iota(9);
  // A 16-token graph, clamped to the 12-entry buffer.
  EXPECT_EQ(helper.prepare(nine, 1, I32{0, 9}, true, eager(9))->logits_indices_padded.size(), 12u);
}

TEST(FastPrefillHelperTest, EmptyOrOversizedIndexListsAreErrors) {
  FakeManager manager;
  FastPrefillHelper helper(4, manager);
  EXPECT_NE(error_of([&] {
              helper.prepare(I32{}, 1, I32{0, 0}, true, eager(1));
            }).find("0 logits indices for a buffer of 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              helper.prepare(iota(5), 1, I32{0, 5}, true, eager(5));
            }).find("5 logits indices"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              helper.prepare(iota(2), 2, I32{0, 1}, true, eager(2));
            }).find("cu_num_logits has 2 entries for 2 requests"),
            std::string::npos);
  EXPECT_THROW(FastPrefillHelper(0, manager), Error);
}

}  // namespace
}  // namespace attnrt
