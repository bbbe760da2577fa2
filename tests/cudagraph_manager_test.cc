// CudaGraphManager: capture descriptors (SEMANTICS §2.5) written out by hand for small
// configurations, §8.10, and dispatch (§2.6) checked exhaustively against a brute-force
// reference; BatchExecutionDescriptor and the compatibility predicate (§2.1, §2.2, §2.8).

#include "attnrt/runner/cudagraph_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

using M = CUDAGraphMode;
using Descriptors = std::vector<BatchExecutionDescriptor>;
constexpr std::nullopt_t None = std::nullopt;

BatchExecutionDescriptor desc(M mode, int tokens, std::optional<int> reqs = None,
                              std::optional<int> uniform = None,
                              std::optional<int> max_query_len = None, int loras = 0) {
  BatchExecutionDescriptor d;
  d.cg_mode = mode;
  d.num_tokens = tokens;
  d.num_reqs = reqs;
  d.uniform_token_count = uniform;
  d.max_query_len = max_query_len;
  d.num_active_loras = loras;
  return d;
}

CudaGraphManagerOptions options(M mode, std::vector<int> sizes, int max_num_reqs,
                                int decode_query_len, std::vector<int> loras = {0}) {
  CudaGraphManagerOptions o;
  o.mode = mode;
  o.capture_sizes = std::move(sizes);
  o.max_num_reqs = max_num_reqs;
  o.decode_query_len = decode_query_len;
  o.lora_capture_cases = std::move(loras);
  return o;
}

CudaGraphManager captured(const CudaGraphManagerOptions& o) {
  CudaGraphManager manager(o);
  manager.mark_captured();
  return manager;
}

// ---- capture descriptors and candidate lists, by hand ----------------------------------------

// FULL_AND_PIECEWISE, sizes [1, 2, 4, 8], 2 requests, 3 tokens per decode request: decode graphs
// round up to whole requests (1, 2 → 3 tokens; 4 → 6; 8 → 9 > 2 × 3, skipped).
TEST(CudaGraphManagerTest, UniformDecodeAndPiecewiseDescriptors) {
  const CudaGraphManager manager = captured(options(M::FULL_AND_PIECEWISE, {1, 2, 4, 8}, 2, 3));
  EXPECT_EQ(manager.capture_descriptors(),
            (Descriptors{desc(M::PIECEWISE, 8), desc(M::PIECEWISE, 4), desc(M::PIECEWISE, 2),
                         desc(M::PIECEWISE, 1), desc(M::FULL, 6, 2, 3), desc(M::FULL, 3, 1, 3)}));
  EXPECT_EQ(manager.candidates(1, 0),
            (Descriptors{desc(M::FULL, 3, 1, 3), desc(M::FULL, 6, 2, 3), desc(M::PIECEWISE, 1),
                         desc(M::PIECEWISE, 2), desc(M::PIECEWISE, 4), desc(M::PIECEWISE, 8)}));
  EXPECT_EQ(manager.candidates(5, 0), (Descriptors{desc(M::FULL, 6, 2, 3), desc(M::PIECEWISE, 8)}));
  EXPECT_EQ(manager.candidates(7, 0), (Descriptors{desc(M::PIECEWISE, 8)}));
  EXPECT_TRUE(manager.candidates(9, 0).empty());

  EXPECT_EQ(manager.dispatch(1, 3, 3, 0, 3), desc(M::FULL, 3, 1, 3));
  EXPECT_EQ(manager.dispatch(2, 6, 3, 0, 3), desc(M::FULL, 6, 2, 3));
  // One token per request is not the captured decode width: the PIECEWISE graph of that size.
  EXPECT_EQ(manager.dispatch(1, 1, 1, 0, 1), desc(M::PIECEWISE, 1));
  EXPECT_EQ(manager.dispatch(2, 5, None, 0, 4), desc(M::PIECEWISE, 8));
  EXPECT_EQ(manager.dispatch(3, 9, 3, 0, 3), BatchExecutionDescriptor::eager(3, 9));
}

// Plain FULL: one request-padded FULL graph per size and LoRA case.
TEST(CudaGraphManagerTest, FullModePadsRequests) {
  const CudaGraphManager manager = captured(options(M::FULL, {1, 2, 4, 8}, 2, 1, {0, 2}));
  EXPECT_TRUE(manager.capture_descriptors(M::PIECEWISE).empty());
  EXPECT_EQ(manager.capture_descriptors(M::FULL),
            (Descriptors{desc(M::FULL, 8, 2, None, None, 0), desc(M::FULL, 8, 2, None, None, 2),
                         desc(M::FULL, 4, 2, None, None, 0), desc(M::FULL, 4, 2, None, None, 2),
                         desc(M::FULL, 2, 2, None, None, 0), desc(M::FULL, 2, 2, None, None, 2),
                         desc(M::FULL, 1, 1, None, None, 0), desc(M::FULL, 1, 1, None, None, 2)}));
  // One active adapter runs on the two-adapter graphs.
  EXPECT_EQ(manager.dispatch(2, 3, None, 1, 2), desc(M::FULL, 4, 2, None, None, 2));
  // Three requests fit no graph (each pads to at most 2 requests): eager, LoRA case mapped.
  EXPECT_EQ(manager.dispatch(3, 3, None, 1, 1), BatchExecutionDescriptor::eager(3, 3, 2));
}

// Adaptive verification: small exact varlen graphs first, then bounded-varlen decode graphs.
TEST(CudaGraphManagerTest, VarlenDecodeDescriptors) {
  CudaGraphManagerOptions o = options(M::FULL_AND_PIECEWISE, {1, 2, 4, 8}, 4, 3);
  o.varlen_decode = true;
  const CudaGraphManager manager = captured(o);
  EXPECT_EQ(manager.capture_descriptors(M::FULL),
            (Descriptors{desc(M::FULL, 8, 4, None, 3), desc(M::FULL, 6, 2, None, 3),
                         desc(M::FULL, 4, 2, None, 3), desc(M::FULL, 4, 4, None, 3),
                         desc(M::FULL, 3, 1, None, 3), desc(M::FULL, 2, 1, None, 3),
                         desc(M::FULL, 2, 2, None, 3), desc(M::FULL, 1, 1, None, 3)}));
  EXPECT_EQ(manager.candidates(2, 0),
            (Descriptors{desc(M::FULL, 2, 1, None, 3), desc(M::FULL, 2, 2, None, 3),
                         desc(M::FULL, 3, 1, None, 3), desc(M::FULL, 4, 2, None, 3),
                         desc(M::FULL, 4, 4, None, 3), desc(M::FULL, 6, 2, None, 3),
                         desc(M::FULL, 8, 4, None, 3), desc(M::PIECEWISE, 2), desc(M::PIECEWISE, 4),
                         desc(M::PIECEWISE, 8)}));
  EXPECT_EQ(manager.dispatch(2, 5, None, 0, 3), desc(M::FULL, 6, 2, None, 3));
  EXPECT_EQ(manager.dispatch(3, 5, None, 0, 3), desc(M::FULL, 8, 4, None, 3));
  EXPECT_EQ(manager.dispatch(2, 5, None, 0, 4), desc(M::PIECEWISE, 8));     // a prefill
  EXPECT_EQ(manager.dispatch(2, 5, None, 0, None), desc(M::PIECEWISE, 8));  // length untracked
}

// FULL with specialize_full_decode: uniform-decode graphs next to the request-padded ones.
TEST(CudaGraphManagerTest, SpecializedFullDecode) {
  CudaGraphManagerOptions o = options(M::FULL, {1, 2, 4}, 4, 2);
  o.specialize_full_decode = true;
  const CudaGraphManager manager = captured(o);
  EXPECT_EQ(manager.candidates(2, 0), (Descriptors{desc(M::FULL, 2, 1, 2), desc(M::FULL, 2, 2),
                                                   desc(M::FULL, 4, 2, 2), desc(M::FULL, 4, 4)}));
  EXPECT_EQ(manager.candidates(1, 0).front(), desc(M::FULL, 1, 1));
  EXPECT_EQ(manager.dispatch(1, 2, 2, 0, 2), desc(M::FULL, 2, 1, 2));
  EXPECT_EQ(manager.dispatch(2, 2, 1, 0, 1), desc(M::FULL, 2, 2));
}

// The exact single-request prefill graph needs breakable graphs and serves only its size.
TEST(CudaGraphManagerTest, SingleRequestPrefillGraph) {
  CudaGraphManagerOptions o = options(M::FULL_AND_PIECEWISE, {8, 16, 32}, 4, 1);
  o.single_request_prefill_tokens = 24;
  EXPECT_EQ(CudaGraphManager(o).capture_descriptors(M::PIECEWISE).size(), 3u);  // not breakable
  o.breakable_cudagraphs = true;
  const CudaGraphManager manager = captured(o);
  BatchExecutionDescriptor exact = desc(M::PIECEWISE, 24, 1, None, 24);
  exact.exact_num_tokens = true;
  EXPECT_EQ(manager.capture_descriptors(),
            (Descriptors{desc(M::PIECEWISE, 32), exact, desc(M::PIECEWISE, 16),
                         desc(M::PIECEWISE, 8)}));  // decode graphs need ≤ 4 tokens: none
  EXPECT_EQ(manager.candidates(20, 0), (Descriptors{exact, desc(M::PIECEWISE, 32)}));
  EXPECT_EQ(manager.dispatch(1, 24, None, 0, 24), exact);
  EXPECT_EQ(manager.dispatch(1, 20, None, 0, 20), desc(M::PIECEWISE, 32));
}

// ---- SEMANTICS §8.10 ---------------------------------------------------------------------------

TEST(CudaGraphManagerTest, FullCaptureRequestSizesLimitFullGraphs) {
  std::vector<int> sizes = {1, 2, 4};
  for (int size = 8; size <= 192; size += 8) sizes.push_back(size);
  CudaGraphManagerOptions o = options(M::FULL_AND_PIECEWISE, sizes, 32, 6);
  o.max_capture_size = 192;
  o.full_capture_request_sizes = std::set<int>{1, 2, 4, 8, 16, 32};
  const CudaGraphManager manager = captured(o);
  // round_up(n, 6) / 6 must be one of the request sizes: 6, 12, 24, 48, 96, 192 tokens.
  EXPECT_EQ(
      manager.capture_descriptors(M::FULL),
      (Descriptors{desc(M::FULL, 192, 32, 6), desc(M::FULL, 96, 16, 6), desc(M::FULL, 48, 8, 6),
                   desc(M::FULL, 24, 4, 6), desc(M::FULL, 12, 2, 6), desc(M::FULL, 6, 1, 6)}));
  const std::set<int> full_tokens = {6, 12, 24, 48, 96, 192};
  for (int tokens = 1; tokens <= 200; ++tokens) {
    for (const BatchExecutionDescriptor& d : manager.candidates(tokens, 0)) {
      if (d.cg_mode == M::FULL) {
        EXPECT_TRUE(full_tokens.contains(d.num_tokens)) << d;
      }
    }
  }
}

TEST(CudaGraphManagerTest, EagerBeforeCaptureAndAboveTheLargestGraph) {
  CudaGraphManager manager(options(M::FULL_AND_PIECEWISE, {1, 2, 4, 8}, 4, 1));
  EXPECT_FALSE(manager.captured());
  EXPECT_EQ(manager.dispatch(3, 3, 1, 0, 1), BatchExecutionDescriptor::eager(3, 3));
  EXPECT_EQ(manager.dispatch(2, 7, None, 0, 6), BatchExecutionDescriptor::eager(2, 7));
  manager.mark_captured();
  EXPECT_EQ(manager.dispatch(3, 3, 1, 0, 1), desc(M::FULL, 4, 4, 1));
  EXPECT_EQ(manager.dispatch(2, 7, None, 0, 6), desc(M::PIECEWISE, 8));
  const BatchExecutionDescriptor above = manager.dispatch(5, 9, None, 0, 5);
  EXPECT_EQ(above.cg_mode, M::NONE);
  EXPECT_EQ(above, BatchExecutionDescriptor::eager(5, 9));
  EXPECT_EQ(manager.dispatch(0, 0, None), BatchExecutionDescriptor::eager(0, 0));
  // No micro-batch twins are captured: a two-micro-batch step runs eagerly.
  EXPECT_EQ(manager.dispatch(3, 3, 1, 0, 1, 2), BatchExecutionDescriptor::eager(3, 3, 0, 2));
}

TEST(CudaGraphManagerTest, NoneModeCapturesNothing) {
  const CudaGraphManager manager = captured(options(M::NONE, {1, 2, 4}, 4, 1));
  EXPECT_TRUE(manager.capture_descriptors().empty());
  EXPECT_EQ(manager.dispatch(1, 1, 1, 0, 1), BatchExecutionDescriptor::eager(1, 1));
}

TEST(CudaGraphManagerTest, FromDefaultEngineConfig) {
  // 128 sequences, no speculation: sizes 1, 2, 4, 8..248, 256; decode graphs up to 128 tokens.
  const CudaGraphManager manager(EngineConfig{}, M::FULL_AND_PIECEWISE);
  EXPECT_EQ(manager.options().max_capture_size, 256);
  EXPECT_EQ(manager.capture_descriptors(M::PIECEWISE).size(), 35u);
  const Descriptors full = manager.capture_descriptors(M::FULL);
  ASSERT_EQ(full.size(), 19u);  // 1, 2, 4 and 8..128
  EXPECT_EQ(full.front(), desc(M::FULL, 128, 128, 1));
  EXPECT_EQ(full.back(), desc(M::FULL, 1, 1, 1));
}

TEST(CudaGraphManagerTest, RejectsBadOptions) {
  EXPECT_THROW(CudaGraphManager(options(M::FULL, {1, 2}, 0, 1)), Error);
  EXPECT_THROW(CudaGraphManager(options(M::FULL, {1, 2}, 4, 0)), Error);
  EXPECT_THROW(CudaGraphManager(options(M::FULL, {0, 2}, 4, 1)), Error);
  EXPECT_THROW(CudaGraphManager(options(M::FULL, {1, 2}, 4, 1, {0, -1})), Error);
  const CudaGraphManager manager = captured(options(M::FULL, {1, 2}, 4, 1));
  EXPECT_THROW(manager.dispatch(-1, 2, None), Error);
}

// The widest decode (1 + 128 speculative tokens): the exact varlen graphs stop at the cap. Wider
// ones, and caps past the config's 2^21 tokens, are refused (their lists took minutes to build).
TEST(CudaGraphManagerTest, WidestDecodeStaysWithinTheCapAndWiderIsRefused) {
  EXPECT_THROW(CudaGraphManager(options(M::FULL_AND_PIECEWISE, {1, 2, 4}, 65536, 2147483647)),
               Error);
  EXPECT_THROW(CudaGraphManager(options(M::FULL_AND_PIECEWISE, {1, 2, (1 << 21) + 1}, 65536, 1)),
               Error);
  CudaGraphManagerOptions o = options(M::FULL_AND_PIECEWISE, {1, 2, 4}, 65536, 129);
  o.varlen_decode = true;
  const CudaGraphManager manager = captured(o);
  const int bound = 129;
  EXPECT_EQ(manager.capture_descriptors(M::FULL),
            (Descriptors{desc(M::FULL, 4, 1, None, bound), desc(M::FULL, 4, 2, None, bound),
                         desc(M::FULL, 4, 4, None, bound), desc(M::FULL, 3, 1, None, bound),
                         desc(M::FULL, 2, 1, None, bound), desc(M::FULL, 2, 2, None, bound),
                         desc(M::FULL, 1, 1, None, bound)}));
  // Without varlen: a decode request is wider than every size, so no uniform graph.
  EXPECT_TRUE(captured(options(M::FULL_AND_PIECEWISE, {1, 2, 4}, 65536, 129))
                  .capture_descriptors(M::FULL)
                  .empty());
}

// The 131 072 sizes of the largest config cap: one descriptor per size and mode, built quickly.
TEST(CudaGraphManagerTest, TheLargestConfigLadderBuildsOneGraphPerSize) {
  std::vector<int> sizes;
  for (int size = 16; size <= (1 << 21); size += 16) sizes.push_back(size);
  const CudaGraphManager manager = captured(options(M::FULL_AND_PIECEWISE, sizes, 65536, 1));
  EXPECT_EQ(manager.capture_descriptors(M::PIECEWISE).size(), sizes.size());
  EXPECT_EQ(manager.capture_descriptors(M::FULL).size(), 65536u / 16);  // r ≤ max_num_reqs
}

// ---- dispatch against a brute-force reference --------------------------------------------------

// §2.4 read literally: the smallest positive case ≥ n, else the largest positive case.
int reference_lora_case(const std::vector<int>& cases, int n) {
  if (n <= 0) return n;
  int smallest_at_least_n = -1;
  int largest = -1;
  for (int c : cases) {
    if (c <= 0) continue;
    largest = std::max(largest, c);
    if (c >= n && (smallest_at_least_n < 0 || c < smallest_at_least_n)) smallest_at_least_n = c;
  }
  if (largest < 0) return n;
  return smallest_at_least_n >= 0 ? smallest_at_least_n : largest;
}

// §2.2, one condition per line.
bool reference_compatible(const BatchExecutionDescriptor& d, const RuntimeBatch& b) {
  if (d.exact_num_tokens && b.num_tokens != d.num_tokens) return false;
  if (d.uniform_token_count && d.uniform_token_count != b.uniform_token_count) return false;
  if (d.max_query_len && !(b.max_query_len && *d.max_query_len >= *b.max_query_len)) return false;
  if (d.num_reqs && *d.num_reqs < b.num_reqs) return false;
  if (d.num_tokens < b.num_tokens) return false;
  if (d.num_active_loras != b.num_active_loras) return false;
  if (d.num_ubatches != b.num_ubatches) return false;
  return true;
}

// §2.5: every FULL graph with at least `tokens` tokens, then every such PIECEWISE graph; nearest
// size first, and at one size uniform-specific, bounded-varlen, request-padded (fewest first),
// unpadded.
Descriptors reference_candidates(const Descriptors& pool, int tokens, int loras) {
  const auto order = [](const BatchExecutionDescriptor& d) {
    return std::make_tuple(d.num_tokens, !d.uniform_token_count.has_value(),
                           !d.max_query_len.has_value(), !d.num_reqs.has_value(),
                           d.num_reqs.value_or(0));
  };
  Descriptors all;
  for (M mode : {M::FULL, M::PIECEWISE}) {
    Descriptors of_mode;
    for (const BatchExecutionDescriptor& d : pool) {
      if (d.cg_mode == mode && d.num_active_loras == loras && d.num_tokens >= tokens) {
        of_mode.push_back(d);
      }
    }
    std::stable_sort(of_mode.begin(), of_mode.end(),
                     [&](const auto& a, const auto& b) { return order(a) < order(b); });
    all.insert(all.end(), of_mode.begin(), of_mode.end());
  }
  return all;
}

// Uniform batches of every length up to one past the decode width; mixed batches of every
// request count, with the longest request untracked, as long as possible, or balanced.
std::vector<RuntimeBatch> batches_of(int tokens, int decode_query_len) {
  std::vector<RuntimeBatch> batches;
  for (int q = 1; q <= decode_query_len + 1; ++q) {
    if (tokens % q == 0) batches.push_back({tokens / q, tokens, q, 0, q, 1});
  }
  for (int reqs = 1; reqs <= std::min(tokens, 18); ++reqs) {
    for (std::optional<int> longest : {std::optional<int>(), std::optional<int>(tokens - reqs + 1),
                                       std::optional<int>((tokens + reqs - 1) / reqs)}) {
      batches.push_back({reqs, tokens, None, 0, longest, 1});
    }
  }
  return batches;
}

std::vector<CudaGraphManagerOptions> exhaustive_configurations() {
  const std::vector<int> sizes = {1, 2, 4, 8, 16, 32, 48, 64};
  const std::vector<int> loras = {0, 1, 2, 4};
  std::vector<CudaGraphManagerOptions> configurations;
  for (M mode : {M::FULL_AND_PIECEWISE, M::FULL, M::PIECEWISE, M::FULL_DECODE_ONLY}) {
    for (int decode_query_len : {1, 3}) {
      configurations.push_back(options(mode, sizes, 16, decode_query_len, loras));
    }
  }
  CudaGraphManagerOptions specialized = options(M::FULL, sizes, 16, 3, loras);
  specialized.specialize_full_decode = true;
  CudaGraphManagerOptions varlen = options(M::FULL_AND_PIECEWISE, sizes, 16, 3, loras);
  varlen.varlen_decode = true;
  CudaGraphManagerOptions varlen_capped = options(M::FULL_DECODE_ONLY, sizes, 16, 3, loras);
  varlen_capped.varlen_decode = true;
  varlen_capped.max_capture_size = 40;
  CudaGraphManagerOptions request_sizes = options(M::FULL_AND_PIECEWISE, sizes, 16, 3, loras);
  request_sizes.full_capture_request_sizes = std::set<int>{1, 2, 4, 8};
  configurations.insert(configurations.end(), {specialized, varlen, varlen_capped, request_sizes});
  return configurations;
}

TEST(CudaGraphManagerDispatchTest, MatchesBruteForceReference) {
  std::map<std::string, int> answers_by_mode;
  for (const CudaGraphManagerOptions& o : exhaustive_configurations()) {
    SCOPED_TRACE(testing::Message() << o.mode << " decode_query_len=" << o.decode_query_len
                                    << " varlen=" << o.varlen_decode);
    const CudaGraphManager manager = captured(o);
    const Descriptors pool = manager.capture_descriptors();
    int mismatches = 0;
    for (int tokens = 1; tokens <= 70; ++tokens) {
      for (int loras = 0; loras <= 5; ++loras) {
        const int lora_case = reference_lora_case(o.lora_capture_cases, loras);
        ASSERT_EQ(manager.lora_case(loras), lora_case);
        const Descriptors candidates = reference_candidates(pool, tokens, lora_case);
        ASSERT_EQ(manager.candidates(tokens, loras), candidates) << tokens << " tokens";
        for (RuntimeBatch batch : batches_of(tokens, o.decode_query_len)) {
          BatchExecutionDescriptor expected =
              BatchExecutionDescriptor::eager(batch.num_reqs, tokens, lora_case);
          batch.num_active_loras = lora_case;
          const auto hit = std::find_if(candidates.begin(), candidates.end(), [&](const auto& d) {
            return reference_compatible(d, batch);
          });
          if (hit != candidates.end()) expected = *hit;
          const BatchExecutionDescriptor actual = manager.dispatch(
              batch.num_reqs, tokens, batch.uniform_token_count, loras, batch.max_query_len);
          ++answers_by_mode[std::string(actual.cg_mode.name())];
          if (actual != expected && ++mismatches <= 5) {
            ADD_FAILURE() << batch.num_reqs << " reqs, " << tokens << " tokens, uniform "
                          << batch.uniform_token_count.value_or(0) << ", " << loras
                          << " loras: got " << actual << ", expected " << expected;
          }
        }
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
  // The sweep exercises all three answers.
  EXPECT_GT(answers_by_mode["FULL"], 1000);
  EXPECT_GT(answers_by_mode["PIECEWISE"], 1000);
  EXPECT_GT(answers_by_mode["NONE"], 1000);
}

}  // namespace
}  // namespace attnrt
