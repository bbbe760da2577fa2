// The GEMV path of CPU_FLASH, per Highway target: decode-like items with at most kGemvMaxRows
// rows per KV head (query tokens × the heads of one GQA group), over one or more KV heads. Head
// dimensions lie along SIMD lanes and K/V are converted in registers straight from the cache, so
// each byte of the group's K/V is read once for all its rows. GemvItem is the entry; which walk
// and which products serve an item is flash_dispatch-inl.h's table. The portable walks are
// flash_gemv_stream-inl.h and flash_gemv_chunks-inl.h; the AVX-512 ones are in avx512/.

#if defined(ATTNRT_CPU_FLASH_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_INL_H_
#endif

#include <algorithm>
#include <type_traits>

#include "flash_dispatch-inl.h"
#include "flash_gemv_chunks-inl.h"
#include "flash_gemv_scores-inl.h"
#include "flash_gemv_stream-inl.h"
#include "flash_rows.h"
#include "flash_types.h"

// Empty off AVX-512 (included for every target, so that Highway's per-target guards stay in step).
#include "backends/cpu_flash/avx512/bf16_gemv-inl.h"
#include "backends/cpu_flash/avx512/f32_four_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// One item with R rows per KV head and f32 products, by the walk ChooseGemvWalk picks.
template <typename T, int R>
HWY_NOINLINE void GemvItemRows(const ForwardTask& task, const Item& item, float* scratch) {
  const CacheView& cache = task.cache;
  const ScratchLayout& layout = task.scratch_layout;
  const RowSet rows = prepare_rows(task, item, 1, scratch);
  float* queries = scratch + layout.q;
  float* o = scratch + layout.o;
  float* scores = scratch + layout.s;
  for (int m = 0; m < rows.count; ++m) {
    const float* q = query_row(task, item, m);
    for (int i = 0; i < cache.key_size; ++i)
      queries[m * cache.key_size + i] = q[i] * task.scale_log2;
  }
  std::fill(o, o + rows.count * cache.value_size, 0.f);
  const GemvWalk walk = ChooseGemvWalk<R>(cache, rows, /*bf16_dot=*/false);
  if constexpr (R == 1 && kLanes >= kStreamKeys) {
    if (walk == GemvWalk::stream_one_row) {
      StreamKeys<T, T>(
          task, item, rows, o,
          [&](int h, const T* const(&keys)[kStreamKeys]) {
            return ScoreFourKeysOneRow<T>(queries + h * cache.key_size, cache.key_size, keys);
          },
          AddValuesF32<T>{cache.value_size});
      return FinishGemvItem(task, item, rows, o);
    }
  }
  const auto values = [&](int h, int first, int count, const std::byte* const* tokens,
                          float* buffer) {
    const RowSet head = slice_rows(rows, h * R, R);
    float* head_scores = buffer + h * kScoreRows<R> * kScoreStride;
    ChunkSoftmax<R>(head, first, count, first >= rows.max_begin && first + count <= rows.min_end,
                    head_scores);
    ChunkValues<T, R>(head_scores, head.alpha, count, tokens, cache.value_offset, cache.value_size,
                      o + h * R * cache.value_size);
  };
#if ATTNRT_AVX512_TARGET
  if constexpr (R >= 3) {
    if (walk == GemvWalk::stream_four_rows || walk == GemvWalk::chunks_by_four) {
      return GemvRowsByFourF32<T, R>(task, item, rows, walk, queries, o, scores, values);
    }
  }
#endif
  ForEachChunk<kGemvKeyGroup<R>>(
      task, item, rows, scores,
      [&](int h, int n, int count, const std::byte* const* tokens, float* buffer) {
        ChunkScores<T, R>(queries + h * R * cache.key_size, cache.key_size, tokens,
                          cache.key_offset, count, buffer + h * kScoreRows<R> * kScoreStride + n);
      },
      values);
  FinishGemvItem(task, item, rows, o);
}

// Calls f(std::integral_constant<int, R>{}) for the item's R rows per KV head, so that each R
// has its own kernel.
template <class F>
HWY_INLINE void WithRowsPerKvHead(const Item& item, const F& f) {
  static_assert(kGemvMaxRows == 8);
  switch (item.rows_per_kv_head()) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 6:
      return f(std::integral_constant<int, 6>{});
    case 7:
      return f(std::integral_constant<int, 7>{});
    default:
      return f(std::integral_constant<int, 8>{});
  }
}

// One GEMV item of a cache of T: bf16 dot products where UsesBf16Dot says, f32 products
// otherwise.
template <typename T>
HWY_INLINE void GemvItem(const ForwardTask& task, const Item& item, float* scratch) {
#if ATTNRT_AVX512_TARGET
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    if (UsesBf16Dot(task)) {
      return WithRowsPerKvHead(item, [&](auto r) { GemvItemBf16<r()>(task, item, scratch); });
    }
  }
#endif
  WithRowsPerKvHead(item, [&](auto r) { GemvItemRows<T, r()>(task, item, scratch); });
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_INL_H_
