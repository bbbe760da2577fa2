// checked_math: products and sums of input-derived sizes either fit or name what overflowed.

#include "attnrt/core/checked_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

TEST(CheckedMathTest, ExactResultsWhenTheyFit) {
  EXPECT_EQ(checked_product("page bytes", 16384, 16384, 65536, 2, 2), std::uint64_t{1} << 46);
  EXPECT_EQ(checked_add(1, 2, "x"), 3u);
  EXPECT_EQ(checked_cast<int>(std::uint64_t{2147483647}, "x"), 2147483647);
}

TEST(CheckedMathTest, OverflowNamesTheQuantity) {
  EXPECT_EQ(error_of([] {
              checked_product("page bytes of layer l0", 1u << 20, 1u << 20, 1u << 20, 1u << 20);
            }),
            "page bytes of layer l0: 1152921504606846976 x 1048576 does not fit in 64 bits");
  EXPECT_NE(error_of([] {
              checked_add(std::numeric_limits<std::uint64_t>::max(), 1, "sum");
            }).find("sum: "),
            std::string::npos);
  EXPECT_NE(error_of([] {
              checked_cast<int>(std::uint64_t{1} << 31, "blocks");
            }).find("blocks: 2147483648 is larger than the largest supported value 2147483647"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
