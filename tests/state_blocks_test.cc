// Blocks per request of state layers by cache mode, and vLLM's max_num_seqs check with its text
// (vLLM's test_mamba_cache_raises_when_max_num_seqs_exceeds_blocks: num_blocks + 100 requests).

#include "attnrt/kv/state_blocks.h"

#include <gtest/gtest.h>

#include <string>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

TEST(StateBlocks, OneBlockPerRequestPlusDrafts) {
  EXPECT_EQ(state_blocks_per_request(StateCacheMode::none, 0), 1);
  EXPECT_EQ(state_blocks_per_request(StateCacheMode::none, 2), 3);
  EXPECT_EQ(state_blocks_per_request(StateCacheMode::align, 0), 2);
  EXPECT_EQ(state_blocks_per_request(StateCacheMode::align, 2), 4);
  EXPECT_NE(error_of([] {
              state_blocks_per_request(StateCacheMode::none, -1);
            }).find("speculative.num_speculative_tokens: must not be negative"),
            std::string::npos);
}

TEST(StateBlocks, MaxNumSeqsAboveTheBlocksIsVllmsError) {
  const std::int64_t num_blocks = 254;
  EXPECT_NO_THROW(check_max_num_seqs_fits_state_blocks(254, num_blocks));
  EXPECT_EQ(error_of([&] { check_max_num_seqs_fits_state_blocks(354, num_blocks); }),
            "max_num_seqs (354) exceeds available Mamba cache blocks (254). Each decode sequence "
            "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
            "max_num_seqs to at most 254 or increase gpu_memory_utilization.");
}

}  // namespace
}  // namespace attnrt
