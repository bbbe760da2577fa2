// BlockPool: the null block is never handed out, allocation is all or nothing, freed blocks are
// reused oldest-freed first, and bad frees throw before anything changes.

#include "attnrt/engine/block_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BlockPoolTest, HandsOutEveryBlockButTheNullBlockInOrder) {
  BlockPool pool(5);
  EXPECT_EQ(pool.num_blocks(), 5);
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_FALSE(pool.is_free(NULL_BLOCK_ID));
  std::vector<BlockId> ids;
  ASSERT_TRUE(pool.allocate(4, ids));
  EXPECT_THAT(ids, ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_FALSE(pool.allocate(1).has_value());
}

TEST(BlockPoolTest, AllocationIsAllOrNothing) {
  BlockPool pool(4);
  std::vector<BlockId> ids = {7};
  EXPECT_FALSE(pool.allocate(4, ids));
  EXPECT_THAT(ids, ElementsAre(7));  // untouched
  EXPECT_EQ(pool.num_free(), 3);
  ASSERT_TRUE(pool.allocate(2, ids));
  EXPECT_THAT(ids, ElementsAre(7, 1, 2));  // appended
  EXPECT_THAT(pool.allocate(0).value(), ElementsAre());
}

TEST(BlockPoolTest, ReusesFreedBlocksOldestFreedFirst) {
  BlockPool pool(6);
  const std::vector<BlockId> first = pool.allocate(3).value();  // 1, 2, 3
  const std::vector<BlockId> freed = {3, 1};
  pool.free(freed);
  EXPECT_TRUE(pool.is_free(3));
  EXPECT_FALSE(pool.is_free(2));
  EXPECT_EQ(pool.num_free(), 4);
  // 4 and 5 were never handed out, so they come before the freed 3 and 1.
  EXPECT_THAT(pool.allocate(4).value(), ElementsAre(4, 5, 3, 1));
  pool.check_consistency();
}

TEST(BlockPoolTest, FreeSkipsNullBlockPlaceholders) {
  BlockPool pool(4);
  const std::vector<BlockId> ids = pool.allocate(2).value();  // 1, 2
  const std::vector<BlockId> with_placeholders = {NULL_BLOCK_ID, NULL_BLOCK_ID, ids[1]};
  pool.free(with_placeholders);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_TRUE(pool.is_free(2));
  EXPECT_FALSE(pool.is_free(1));
}

TEST(BlockPoolTest, BadFreesThrowBeforeFreeingAny) {
  BlockPool pool(5);
  const std::vector<BlockId> ids = pool.allocate(2).value();  // 1, 2
  const std::vector<BlockId> twice = {1, 2, 1};
  EXPECT_THAT(error_of([&] { pool.free(twice); }), HasSubstr("block 1 is freed but not allocated"));
  const std::vector<BlockId> never_allocated = {2, 4};
  EXPECT_THAT(error_of([&] { pool.free(never_allocated); }),
              HasSubstr("block 4 is freed but not allocated (a double free)"));
  const std::vector<BlockId> out_of_range = {1, 5};
  EXPECT_THAT(error_of([&] { pool.free(out_of_range); }),
              HasSubstr("cannot free block 5: ids are 1..4"));
  // Nothing was freed by the failed calls.
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_FALSE(pool.is_free(1));
  EXPECT_FALSE(pool.is_free(2));
  pool.check_consistency();
  pool.free(ids);
  EXPECT_EQ(pool.num_free(), 4);
}

TEST(BlockPoolTest, RejectsPoolsWithoutAUsableBlock) {
  EXPECT_THAT(error_of([] { BlockPool pool(1); }), HasSubstr("num_blocks 1 must be in [2,"));
  EXPECT_THAT(error_of([] { BlockPool pool(std::int64_t{1} << 31); }),
              HasSubstr("num_blocks 2147483648"));
  BlockPool pool(2);
  EXPECT_THAT(pool.allocate(1).value(), ElementsAre(1));
}

}  // namespace
}  // namespace attnrt
