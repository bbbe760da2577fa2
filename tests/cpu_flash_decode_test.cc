// CPU_FLASH decodes against CPU_REFERENCE: long contexts split among threads and merged, every
// rows-per-KV-head kernel, and the one-row stream path over many full chunks.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/simd_targets.h"
#include "cpu_flash_batch.h"
#include "cpu_flash_check.h"

namespace attnrt {
namespace {

using flash_test::check_scenario;
using flash_test::Scenario;
using flash_test::splitting_options;

// Decodes over long contexts: few items, so the keys are split and merged; the sliding window
// leaves whole splits without a visible key (their max is -inf and their weight 0).
TEST(CpuFlashDecodeTest, SplitDecodesOverLongContextsMatchTheReference) {
  const CpuFlashBackend flash(splitting_options());
  Scenario mla;
  mla.shape = AttentionShape{AttentionType::mla, 16, 1, 40, 32};
  mla.dtype = DType::bf16;
  mla.requests = {{300, 1}};
  check_scenario(mla, 1, flash, "MLA decode, 16 heads over one latent");
  Scenario gqa;
  gqa.shape = AttentionShape{AttentionType::full, 4, 1, 32, 32};
  gqa.dtype = DType::f16;
  gqa.layout = KVCacheLayout::LBHNC;
  gqa.requests = {{257, 1}, {180, 2}};
  check_scenario(gqa, 2, flash, "GQA decode and spec-decode rows");
  Scenario window = gqa;
  window.shape.type = AttentionType::sliding_window;
  window.shape.sliding_window = 40;
  window.requests = {{400, 1}};
  check_scenario(window, 3, flash, "sliding-window decode");
}

// Decode and spec-decode rows per KV head from 1 to 8 with head sizes the AVX512-BF16 path
// takes (multiples of 32): each row count has its own kernel; groups of 4 rows share one pass.
TEST(CpuFlashDecodeTest, Bf16DecodesForEveryRowCountMatchTheReference) {
  const CpuFlashBackend flash(splitting_options());
  for (int group : {1, 2, 3, 4, 5, 8}) {
    for (int query_len : {1, 2}) {
      if (group * query_len > 8) continue;
      Scenario s;
      s.shape = AttentionShape{AttentionType::full, 2 * group, 2, 64, 32};
      s.dtype = DType::bf16;
      s.requests = {{90, query_len}, {33, query_len}};
      check_scenario(s, 40 + group, flash,
                     fmt::format("{} query heads per KV head, {} tokens", group, query_len));
    }
  }
}

// A decode scenario over every cache dtype and the given head sizes, each split and unsplit,
// with f32 products too on bf16, and under a sliding window of 200; `extra` adds variants.
template <class Extra>
void check_stream_scenarios(const AttentionShape& shape,
                            const std::vector<std::pair<int, int>>& requests,
                            std::initializer_list<std::pair<int, int>> head_sizes, int seed,
                            const Extra& extra) {
  CpuFlashOptions exact = splitting_options();
  exact.bf16_products = Bf16Products::f32;
  const CpuFlashBackend split(splitting_options());
  const CpuFlashBackend unsplit(CpuFlashOptions{.num_threads = 1});
  const CpuFlashBackend no_dot(exact);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    for (const auto& [head_size, head_size_v] : head_sizes) {
      Scenario s;
      s.shape = shape;
      s.shape.head_size = head_size;
      s.shape.head_size_v = head_size_v;
      s.dtype = dtype;
      s.requests = requests;
      const std::string what =
          fmt::format("{} head {}/{}", dtype_name(dtype), head_size, head_size_v);
      check_scenario(s, seed++, split, what + ", split");
      check_scenario(s, seed++, unsplit, what + ", one thread");
      if (dtype == DType::bf16) check_scenario(s, seed++, no_dot, what + ", f32 products");
      Scenario window = s;
      window.shape.type = AttentionType::sliding_window;
      window.shape.sliding_window = 200;
      check_scenario(window, seed++, split, what + ", window 200");
      extra(s, seed++, split, what);
    }
  }
}

// One query row per KV head (MHA decode) streams K and V in one pass: contexts of many full
// 64-key chunks (walked 4 ways interleaved) and a ragged end, head sizes with vector tails, every
// cache dtype, bf16 with and without dot products, a sliding window, and split and unsplit
// requests; the running max moves many times over random keys, so O is rescaled mid-stream.
TEST(CpuFlashDecodeTest, OneRowPerKvHeadStreamsLongContexts) {
  check_stream_scenarios(AttentionShape{AttentionType::full, 3, 3},
                         {{1000, 1}, {261, 1}, {64, 1}, {3, 1}}, {{128, 128}, {80, 96}, {20, 12}},
                         500,
                         [](const Scenario&, int, const CpuFlashBackend&, const std::string&) {});
}

// Four query rows per KV head that see the same keys (a 4:1 GQA decode token) stream too on
// AVX-512, eight keys a step (in full 128-key chunks one token row of eight pages, the next
// step's records prefetched, across chunks too), with f32 products or AVX512-BF16 ones: every
// cache dtype, contexts with a ragged last step (261, 69 and 3 keys leave a step's second group
// part-filled or empty), a sliding window, split and unsplit, and 64-key pages in LBHNC. Head
// 80/80 (values not a multiple of 32) and two tokens of a 2:1 group (four rows that see
// different keys) keep the chunk walk; MLA with 4 heads streams.
TEST(CpuFlashDecodeTest, FourRowsPerKvHeadStreamLongContexts) {
  check_stream_scenarios(
      AttentionShape{AttentionType::full, 8, 2}, {{1000, 1}, {261, 1}, {72, 1}, {69, 1}, {3, 1}},
      {{128, 128}, {64, 96}, {80, 80}}, 600,
      [](const Scenario& s, int seed, const CpuFlashBackend& flash, const std::string& what) {
        Scenario two_tokens = s;
        two_tokens.shape.num_heads = 4;
        two_tokens.requests = {{300, 2}, {70, 2}};
        check_scenario(two_tokens, seed, flash, what + ", two tokens of a 2:1 group");
        Scenario big_pages = s;
        big_pages.block_size = big_pages.kernel_block_size = 64;
        big_pages.layout = KVCacheLayout::LBHNC;
        big_pages.requests = {{1000, 1}};
        check_scenario(big_pages, seed + 1000, flash, what + ", 64-key pages in LBHNC");
      });
  // MLA with 4 query heads: K and V share the 576-wide latent, V its first 512 entries.
  const CpuFlashBackend flash(splitting_options());
  int seed = 680;
  for (DType dtype : {DType::f16, DType::bf16}) {
    Scenario mla;
    mla.shape = AttentionShape{AttentionType::mla, 4, 1, 576, 512};
    mla.dtype = dtype;
    mla.requests = {{300, 1}, {69, 1}};
    check_scenario(mla, seed++, flash, fmt::format("MLA 576/512, 4 heads, {}", dtype_name(dtype)));
  }
}

// The four-row stream's next-step prefetch, forced on and off whatever the CPU would choose: both
// walks (several full chunks, split, then a ragged end) match the reference.
TEST(CpuFlashDecodeTest, FourRowStreamMatchesTheReferenceWithAndWithoutPrefetch) {
  int seed = 660;
  for (const bool prefetch : {true, false}) {
    CpuFlashOptions options = splitting_options();
    options.stream_prefetch = prefetch;
    const CpuFlashBackend flash(options);
    for (DType dtype : {DType::f16, DType::bf16}) {
      Scenario s;
      s.shape = AttentionShape{AttentionType::full, 8, 2, 128, 128};
      s.dtype = dtype;
      s.requests = {{1000, 1}, {261, 1}};
      check_scenario(s, seed++, flash,
                     fmt::format("{}, prefetch {}", dtype_name(dtype), prefetch ? "on" : "off"));
    }
  }
}

// The stream path on every SIMD target the CPU runs (AVX2's 8 lanes, the scalar fallback's chunk
// walk), over contexts of several full chunks.
TEST(CpuFlashDecodeTest, OneRowPerKvHeadOnEverySimdTarget) {
  int seed = 700;
  for (const std::string& target : cpu_flash_simd_targets()) {
    const ScopedSimdTarget pinned(target);
    const CpuFlashBackend flash(splitting_options());
    for (DType dtype : {DType::f16, DType::bf16}) {
      Scenario s;
      s.shape = AttentionShape{AttentionType::full, 2, 2, 80, 96};
      s.dtype = dtype;
      s.requests = {{700, 1}, {130, 1}};
      check_scenario(s, seed++, flash, fmt::format("{} {}", target, dtype_name(dtype)));
    }
  }
}

}  // namespace
}  // namespace attnrt
