// resolve_cudagraph_mode (SEMANTICS §1.3) over every configured mode × support level × spec
// decode on/off × attention split on/off, with expectations worked out by hand from the rules;
// the piecewise-unavailable normalisation; resolve_adaptive_cudagraph_mode (§8.2).

#include "attnrt/runner/cudagraph_resolution.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

using M = CUDAGraphMode;
using S = AttentionCGSupport;

const std::optional<std::string> kBackend = "FLASHINFER";

// The two message heads of §1.3, spelled out once. Rules 1 and 2 use `unsupported`, rule 3
// `unsupported_with_spec_decode`; <mode> is the working mode when the rule fires.
std::string unsupported(const char* mode, const char* support) {
  return std::string("CUDAGraphMode.") + mode + " is not supported with FLASHINFER backend " +
         "(support: AttentionCGSupport." + support + ")";
}
std::string unsupported_with_spec_decode(const char* mode, const char* support) {
  return std::string("CUDAGraphMode.") + mode +
         " is not supported with spec-decode for attention backend FLASHINFER " +
         "(support: AttentionCGSupport." + support + ")";
}

const std::string kToFullAndPiecewise = "; setting cudagraph_mode=FULL_AND_PIECEWISE";
const std::string kToFullDecodeOnly = "; setting cudagraph_mode=FULL_DECODE_ONLY";
const std::string kToPiecewise = "; setting cudagraph_mode=PIECEWISE";
const std::string kToNone = "; setting cudagraph_mode=NONE";
const std::string kToPiecewiseCompiled =
    "; setting cudagraph_mode=PIECEWISE because attention is compiled piecewise";
const std::string kToNoneNotCompiled =
    "; setting cudagraph_mode=NONE because attention is not compiled piecewise";
const std::string kTryPiecewise =
    "; please try cudagraph_mode=PIECEWISE, and make sure compilation mode is VLLM_COMPILE";

constexpr int kAny = -1;  // the row holds for both values of this switch

struct Row {
  CUDAGraphMode requested;
  AttentionCGSupport support;
  int spec_decode;  // 0: uniform_decode_query_len 1; 1: 4 (three speculative tokens); or kAny
  int split;        // attention_split_piecewise: 0, 1, or kAny
  std::optional<CUDAGraphMode> resolved;  // none: resolution throws messages[0]
  std::vector<std::string> messages;
};

// clang-format off
const std::vector<Row> kRows = {
    // NONE and PIECEWISE never change: no rule looks at a mode without FULL graphs.
    {M::NONE, S::NEVER, kAny, kAny, M::NONE, {}},
    {M::NONE, S::UNIFORM_SINGLE_TOKEN_DECODE, kAny, kAny, M::NONE, {}},
    {M::NONE, S::UNIFORM_BATCH, kAny, kAny, M::NONE, {}},
    {M::NONE, S::ALWAYS, kAny, kAny, M::NONE, {}},
    {M::PIECEWISE, S::NEVER, kAny, kAny, M::PIECEWISE, {}},
    {M::PIECEWISE, S::UNIFORM_SINGLE_TOKEN_DECODE, kAny, kAny, M::PIECEWISE, {}},
    {M::PIECEWISE, S::UNIFORM_BATCH, kAny, kAny, M::PIECEWISE, {}},
    {M::PIECEWISE, S::ALWAYS, kAny, kAny, M::PIECEWISE, {}},

    // FULL: rule 1 keeps FULL only with ALWAYS; NEVER raises; otherwise FULL decode graphs stay,
    // and rule 3 then drops them for spec decode below UNIFORM_BATCH.
    {M::FULL, S::ALWAYS, kAny, kAny, M::FULL, {}},
    {M::FULL, S::UNIFORM_BATCH, kAny, 1, M::FULL_AND_PIECEWISE,
     {unsupported("FULL", "UNIFORM_BATCH") + kToFullAndPiecewise}},
    {M::FULL, S::UNIFORM_BATCH, kAny, 0, M::FULL_DECODE_ONLY,
     {unsupported("FULL", "UNIFORM_BATCH") + kToFullDecodeOnly}},
    {M::FULL, S::UNIFORM_SINGLE_TOKEN_DECODE, 0, 1, M::FULL_AND_PIECEWISE,
     {unsupported("FULL", "UNIFORM_SINGLE_TOKEN_DECODE") + kToFullAndPiecewise}},
    {M::FULL, S::UNIFORM_SINGLE_TOKEN_DECODE, 0, 0, M::FULL_DECODE_ONLY,
     {unsupported("FULL", "UNIFORM_SINGLE_TOKEN_DECODE") + kToFullDecodeOnly}},
    {M::FULL, S::UNIFORM_SINGLE_TOKEN_DECODE, 1, 1, M::PIECEWISE,
     {unsupported("FULL", "UNIFORM_SINGLE_TOKEN_DECODE") + kToFullAndPiecewise,
      unsupported_with_spec_decode("FULL_AND_PIECEWISE", "UNIFORM_SINGLE_TOKEN_DECODE") +
          kToPiecewise}},
    {M::FULL, S::UNIFORM_SINGLE_TOKEN_DECODE, 1, 0, M::NONE,
     {unsupported("FULL", "UNIFORM_SINGLE_TOKEN_DECODE") + kToFullDecodeOnly,
      unsupported_with_spec_decode("FULL_DECODE_ONLY", "UNIFORM_SINGLE_TOKEN_DECODE") + kToNone}},
    {M::FULL, S::NEVER, kAny, kAny, std::nullopt, {unsupported("FULL", "NEVER") + kTryPiecewise}},

    // FULL_DECODE_ONLY: no mixed FULL routine, so rule 1 never fires; rule 2 for NEVER, rule 3
    // for single-token support under spec decode.
    {M::FULL_DECODE_ONLY, S::ALWAYS, kAny, kAny, M::FULL_DECODE_ONLY, {}},
    {M::FULL_DECODE_ONLY, S::UNIFORM_BATCH, kAny, kAny, M::FULL_DECODE_ONLY, {}},
    {M::FULL_DECODE_ONLY, S::UNIFORM_SINGLE_TOKEN_DECODE, 0, kAny, M::FULL_DECODE_ONLY, {}},
    {M::FULL_DECODE_ONLY, S::UNIFORM_SINGLE_TOKEN_DECODE, 1, 1, M::PIECEWISE,
     {unsupported_with_spec_decode("FULL_DECODE_ONLY", "UNIFORM_SINGLE_TOKEN_DECODE") +
      kToPiecewise}},
    {M::FULL_DECODE_ONLY, S::UNIFORM_SINGLE_TOKEN_DECODE, 1, 0, M::NONE,
     {unsupported_with_spec_decode("FULL_DECODE_ONLY", "UNIFORM_SINGLE_TOKEN_DECODE") + kToNone}},
    {M::FULL_DECODE_ONLY, S::NEVER, kAny, 1, M::PIECEWISE,
     {unsupported("FULL_DECODE_ONLY", "NEVER") + kToPiecewiseCompiled}},
    {M::FULL_DECODE_ONLY, S::NEVER, kAny, 0, M::NONE,
     {unsupported("FULL_DECODE_ONLY", "NEVER") + kToNoneNotCompiled}},

    // FULL_AND_PIECEWISE: as FULL_DECODE_ONLY (its mixed routine is PIECEWISE).
    {M::FULL_AND_PIECEWISE, S::ALWAYS, kAny, kAny, M::FULL_AND_PIECEWISE, {}},
    {M::FULL_AND_PIECEWISE, S::UNIFORM_BATCH, kAny, kAny, M::FULL_AND_PIECEWISE, {}},
    {M::FULL_AND_PIECEWISE, S::UNIFORM_SINGLE_TOKEN_DECODE, 0, kAny, M::FULL_AND_PIECEWISE, {}},
    {M::FULL_AND_PIECEWISE, S::UNIFORM_SINGLE_TOKEN_DECODE, 1, 1, M::PIECEWISE,
     {unsupported_with_spec_decode("FULL_AND_PIECEWISE", "UNIFORM_SINGLE_TOKEN_DECODE") +
      kToPiecewise}},
    {M::FULL_AND_PIECEWISE, S::UNIFORM_SINGLE_TOKEN_DECODE, 1, 0, M::NONE,
     {unsupported_with_spec_decode("FULL_AND_PIECEWISE", "UNIFORM_SINGLE_TOKEN_DECODE") +
      kToNone}},
    {M::FULL_AND_PIECEWISE, S::NEVER, kAny, 1, M::PIECEWISE,
     {unsupported("FULL_AND_PIECEWISE", "NEVER") + kToPiecewiseCompiled}},
    {M::FULL_AND_PIECEWISE, S::NEVER, kAny, 0, M::NONE,
     {unsupported("FULL_AND_PIECEWISE", "NEVER") + kToNoneNotCompiled}},
};
// clang-format on

std::vector<int> expand(int value) {
  return value == kAny ? std::vector<int>{0, 1} : std::vector<int>{value};
}

TEST(ResolveCudagraphModeTest, EveryModeSupportSpecDecodeAndSplit) {
  std::map<std::tuple<std::string, int, int, int>, int> covered;
  for (const Row& row : kRows) {
    for (int spec_decode : expand(row.spec_decode)) {
      for (int split : expand(row.split)) {
        const int query_len = spec_decode ? 4 : 1;
        SCOPED_TRACE(testing::Message() << row.requested << " " << cg_support_name(row.support)
                                        << " q=" << query_len << " split=" << split);
        ++covered[{std::string(row.requested.name()), static_cast<int>(row.support), spec_decode,
                   split}];
        const auto resolve = [&] {
          return resolve_cudagraph_mode(row.requested, row.support, kBackend, query_len,
                                        split == 1);
        };
        if (!row.resolved) {
          try {
            resolve();
            ADD_FAILURE() << "no error";
          } catch (const Error& error) {
            EXPECT_EQ(error.what(), row.messages.at(0));
          }
          continue;
        }
        const CUDAGraphModeResolution result = resolve();
        EXPECT_EQ(result.mode, *row.resolved);
        EXPECT_EQ(result.messages, row.messages);
      }
    }
  }
  // 5 modes × 4 levels × 2 × 2, each combination exactly once.
  EXPECT_EQ(covered.size(), 80u);
  for (const auto& [combination, count] : covered) EXPECT_EQ(count, 1);
}

TEST(ResolveCudagraphModeTest, MessagesReadAsVllmPrintsThem) {
  const CUDAGraphModeResolution result =
      resolve_cudagraph_mode(M::FULL, S::UNIFORM_BATCH, std::string("FlashInferBackend"), 1, true);
  ASSERT_EQ(result.messages.size(), 1u);
  EXPECT_EQ(result.messages[0],
            "CUDAGraphMode.FULL is not supported with FlashInferBackend backend (support: "
            "AttentionCGSupport.UNIFORM_BATCH); setting cudagraph_mode=FULL_AND_PIECEWISE");
}

TEST(ResolveCudagraphModeTest, AbsentBackendPrintsNone) {
  const CUDAGraphModeResolution result =
      resolve_cudagraph_mode(M::FULL_DECODE_ONLY, S::NEVER, std::nullopt, 1, false);
  EXPECT_EQ(result.mode, M::NONE);
  ASSERT_EQ(result.messages.size(), 1u);
  EXPECT_EQ(result.messages[0],
            "CUDAGraphMode.FULL_DECODE_ONLY is not supported with None backend (support: "
            "AttentionCGSupport.NEVER); setting cudagraph_mode=NONE because attention is not "
            "compiled piecewise");
}

TEST(ResolveCudagraphModeTest, FullWithoutSupportRaisesVllmText) {
  try {
    resolve_cudagraph_mode(M::FULL, S::NEVER, std::nullopt);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "CUDAGraphMode.FULL is not supported with None backend (support: "
                 "AttentionCGSupport.NEVER); please try cudagraph_mode=PIECEWISE, and make sure "
                 "compilation mode is VLLM_COMPILE");
  }
}

// SEMANTICS §8.1 item 10: a UNIFORM_BATCH backend under FULL keeps FULL decode graphs only.
TEST(ResolveCudagraphModeTest, UniformBatchKeepsFullDecodeForSpecDecode) {
  for (int query_len : {1, 8}) {
    const M mode = resolve_cudagraph_mode(M::FULL, S::UNIFORM_BATCH, kBackend, query_len).mode;
    EXPECT_NE(mode.mixed_mode(), M::FULL);
    EXPECT_EQ(mode.decode_mode(), M::FULL);
  }
}

struct Unavailable {
  CUDAGraphMode requested;
  AttentionCGSupport support;
  CUDAGraphMode resolved;
  std::vector<std::string> messages;
};

TEST(ResolveCudagraphModeTest, WithoutPiecewiseCaptureDropsPiecewiseGraphs) {
  const std::string piecewise_dropped =
      "CUDAGraphMode.PIECEWISE needs piecewise CUDA graph capture, which is unavailable (no "
      "compiled submodule and breakable CUDA graphs are off); setting cudagraph_mode=NONE";
  const std::string full_and_piecewise_dropped =
      "CUDAGraphMode.FULL_AND_PIECEWISE needs piecewise CUDA graph capture, which is unavailable "
      "(no compiled submodule and breakable CUDA graphs are off); setting "
      "cudagraph_mode=FULL_DECODE_ONLY";
  const std::vector<Unavailable> cases = {
      {M::NONE, S::ALWAYS, M::NONE, {}},
      {M::PIECEWISE, S::ALWAYS, M::NONE, {piecewise_dropped}},
      {M::FULL, S::ALWAYS, M::FULL, {}},
      {M::FULL_DECODE_ONLY, S::ALWAYS, M::FULL_DECODE_ONLY, {}},
      {M::FULL_AND_PIECEWISE, S::ALWAYS, M::FULL_DECODE_ONLY, {full_and_piecewise_dropped}},
      // Rule 1 first moves FULL to FULL_AND_PIECEWISE, then the normalisation applies.
      {M::FULL,
       S::UNIFORM_BATCH,
       M::FULL_DECODE_ONLY,
       {unsupported("FULL", "UNIFORM_BATCH") + kToFullAndPiecewise, full_and_piecewise_dropped}},
      // Rule 2 falls back to PIECEWISE, which is then dropped too.
      {M::FULL_AND_PIECEWISE,
       S::NEVER,
       M::NONE,
       {unsupported("FULL_AND_PIECEWISE", "NEVER") + kToPiecewiseCompiled, piecewise_dropped}},
  };
  for (const Unavailable& c : cases) {
    SCOPED_TRACE(c.requested.name());
    const CUDAGraphModeResolution result =
        resolve_cudagraph_mode(c.requested, c.support, kBackend, 1, true, false);
    EXPECT_EQ(result.mode, c.resolved);
    EXPECT_EQ(result.messages, c.messages);
  }
}

TEST(ResolveCudagraphModeTest, RejectsQueryLengthBelowOne) {
  EXPECT_THROW(resolve_cudagraph_mode(M::FULL, S::ALWAYS, kBackend, 0), Error);
}

// SEMANTICS §8.2.
TEST(ResolveAdaptiveCudagraphModeTest, AdaptiveVerificationList) {
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::FULL_DECODE_ONLY, true), M::FULL_DECODE_ONLY);
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::FULL_DECODE_ONLY, false), M::FULL_DECODE_ONLY);
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::FULL, true), M::FULL_AND_PIECEWISE);
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::FULL, false), M::FULL_DECODE_ONLY);
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::FULL_AND_PIECEWISE, true), M::FULL_AND_PIECEWISE);
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::FULL_AND_PIECEWISE, false), M::FULL_DECODE_ONLY);
  // Not listed in §8.2: modes without FULL graphs pass through.
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::NONE, true), M::NONE);
  EXPECT_EQ(resolve_adaptive_cudagraph_mode(M::PIECEWISE, false), M::PIECEWISE);
}

}  // namespace
}  // namespace attnrt
