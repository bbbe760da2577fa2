// CUDAGraphMode: the table of SEMANTICS §1.2 for every mode, truthiness, names and parsing.

#include "attnrt/config/cudagraph_mode.h"

#include <gtest/gtest.h>

#include <sstream>
#include <unordered_set>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

using M = CUDAGraphMode;

struct ModeRow {
  CUDAGraphMode mode;
  const char* name;
  bool separate_routine;
  CUDAGraphMode decode;
  CUDAGraphMode mixed;
  bool has_full;
  bool has_piecewise;
  CUDAGraphMode max_mode;
};

// SEMANTICS §1.2, one row per member; max_mode is the larger element of the pair.
const ModeRow kTable[] = {
    {M::NONE, "NONE", false, M::NONE, M::NONE, false, false, M::NONE},
    {M::PIECEWISE, "PIECEWISE", false, M::PIECEWISE, M::PIECEWISE, false, true, M::PIECEWISE},
    {M::FULL, "FULL", false, M::FULL, M::FULL, true, false, M::FULL},
    {M::FULL_DECODE_ONLY, "FULL_DECODE_ONLY", true, M::FULL, M::NONE, true, false, M::FULL},
    {M::FULL_AND_PIECEWISE, "FULL_AND_PIECEWISE", true, M::FULL, M::PIECEWISE, true, true, M::FULL},
};

TEST(CUDAGraphModeTest, SemanticsTableForEveryMode) {
  for (const ModeRow& row : kTable) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.mode.name(), row.name);
    EXPECT_EQ(row.mode.separate_routine(), row.separate_routine);
    EXPECT_EQ(row.mode.decode_mode(), row.decode);
    EXPECT_EQ(row.mode.mixed_mode(), row.mixed);
    EXPECT_EQ(row.mode.has_full_cudagraphs(), row.has_full);
    EXPECT_EQ(row.mode.has_piecewise_cudagraphs(), row.has_piecewise);
    EXPECT_EQ(row.mode.requires_piecewise_compilation(), row.has_piecewise);
    EXPECT_EQ(row.mode.max_cudagraph_mode(), row.max_mode);
  }
}

TEST(CUDAGraphModeTest, HasModeIsMembershipInThePair) {
  EXPECT_TRUE(M::FULL_AND_PIECEWISE.has_mode(M::FULL));
  EXPECT_TRUE(M::FULL_AND_PIECEWISE.has_mode(M::PIECEWISE));
  EXPECT_FALSE(M::FULL_AND_PIECEWISE.has_mode(M::NONE));
  EXPECT_TRUE(M::FULL_DECODE_ONLY.has_mode(M::FULL));
  EXPECT_TRUE(M::FULL_DECODE_ONLY.has_mode(M::NONE));
  EXPECT_FALSE(M::FULL_DECODE_ONLY.has_mode(M::PIECEWISE));
  EXPECT_TRUE(M::PIECEWISE.has_mode(M::PIECEWISE));
  EXPECT_FALSE(M::PIECEWISE.has_mode(M::FULL));
  EXPECT_TRUE(M::NONE.has_mode(M::NONE));
  EXPECT_FALSE(M::FULL.has_mode(M::NONE));
  EXPECT_THROW((void)M::FULL.has_mode(M::FULL_DECODE_ONLY), Error);
}

TEST(CUDAGraphModeTest, TruthinessIsNotNone) {
  EXPECT_FALSE(static_cast<bool>(M::NONE));
  EXPECT_TRUE(static_cast<bool>(M::PIECEWISE));
  EXPECT_TRUE(static_cast<bool>(M::FULL));
  EXPECT_TRUE(static_cast<bool>(M::FULL_DECODE_ONLY));
  EXPECT_TRUE(static_cast<bool>(M::FULL_AND_PIECEWISE));
  // The manager's idiom: FULL_DECODE_ONLY has no mixed routine.
  EXPECT_FALSE(static_cast<bool>(M::FULL_DECODE_ONLY.mixed_mode()));
  EXPECT_EQ(CUDAGraphMode(), M::NONE);
}

TEST(CUDAGraphModeTest, ConstantsAreCompileTimeValues) {
  static_assert(M::FULL_AND_PIECEWISE.decode_mode() == M::FULL);
  static_assert(M::FULL_AND_PIECEWISE.mixed_mode() == M::PIECEWISE);
  static_assert(M::FULL_DECODE_ONLY != M::FULL);
  static_assert(M::all().size() == 5);
  SUCCEED();
}

TEST(CUDAGraphModeTest, RuntimeModesAreTheSimpleOnes) {
  const auto runtime = CUDAGraphMode::valid_runtime_modes();
  ASSERT_EQ(runtime.size(), 3u);
  EXPECT_EQ(runtime[0], M::NONE);
  EXPECT_EQ(runtime[1], M::PIECEWISE);
  EXPECT_EQ(runtime[2], M::FULL);
}

TEST(CUDAGraphModeTest, NamesRoundTripAndQualify) {
  for (const ModeRow& row : kTable) {
    EXPECT_EQ(CUDAGraphMode::parse(row.name), row.mode);
    EXPECT_EQ(row.mode.qualified_name(), std::string("CUDAGraphMode.") + row.name);
    std::ostringstream out;
    out << row.mode;
    EXPECT_EQ(out.str(), row.name);
  }
}

TEST(CUDAGraphModeTest, ParseErrorListsValidNames) {
  try {
    (void)CUDAGraphMode::parse("FULL_AND_PIECEWIZE");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "unknown CUDA graph mode \"FULL_AND_PIECEWIZE\"; expected one of NONE, PIECEWISE, "
                 "FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE");
  }
  EXPECT_THROW((void)CUDAGraphMode::parse("full"), Error);  // names are case-sensitive, as in vLLM
}

TEST(CUDAGraphModeTest, EveryModeHashesDistinctly) {
  const auto modes = M::all();
  const std::unordered_set<CUDAGraphMode> seen(modes.begin(), modes.end());
  EXPECT_EQ(seen.size(), 5u);
}

}  // namespace
}  // namespace attnrt
