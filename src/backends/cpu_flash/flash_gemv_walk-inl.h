// The walk of a GEMV item of CPU_FLASH (decode-like, at most kGemvMaxRows rows per KV head), per
// Highway target: head dimensions lie along SIMD lanes and K/V are converted in registers straight
// from the cache, so each byte of the group's K/V is read once for all its rows. One driver,
// GemvItemWalk, packs the query rows, takes the walk ChooseGemvWalk picks (flash_dispatch-inl.h)
// and writes the rows out; a products policy says how the products are made: f32 FMAs here
// (GemvF32Products), AVX512-BF16 dot products in avx512/bf16_gemv-inl.h (GemvBf16DotProducts).
//
// A policy for R rows per KV head has kRows (R); kBf16Dot (for ChooseGemvWalk); kPermutedO (O
// accumulates out of order, and UnpermuteO(o, rows) puts it back); Key and Value (the cache
// pointers the one-row stream hands over); a constructor (task, item, rows, walk, scratch) that
// packs the query rows; and the functors of the walks MayChooseGemvWalk allows it, which go
// straight into the walks:
//   one-row stream (StreamKeys)       StreamScores(), StreamValues()
//   four-row stream (StreamFourRows)  FourRowStreamScores(), FourRowStreamValues()
//   chunk walk (ForEachChunk)         ScoresByKeyGroup() or ScoresByFour(), then ChunkValues()
// Straight, because the bf16 functors must be lambdas of AVX512-BF16 functions (or functions with
// that target): GCC inlines such code into the walks only where GemvItemBf16's flatten reaches it
// from the walk itself, not through a lambda of the driver, which lacks the target.

#if defined(ATTNRT_CPU_FLASH_GEMV_WALK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_WALK_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_WALK_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_WALK_INL_H_
#endif

#include <algorithm>

#include "flash_dispatch-inl.h"
#include "flash_gemv_chunks-inl.h"
#include "flash_gemv_scores-inl.h"
#include "flash_gemv_stream-inl.h"
#include "flash_rows.h"
#include "flash_types.h"

// Empty off AVX-512 (included for every target, so that Highway's per-target guards stay in step).
#include "backends/cpu_flash/avx512/f32_four_row_scores-inl.h"
#include "backends/cpu_flash/avx512/four_row_stream-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// O (rows value_size apart) in order, then written to the output or the item's split partial.
template <class Products>
HWY_INLINE void FinishGemvWalk(const Products& products, const ForwardTask& task, const Item& item,
                               const RowSet& rows, float* o) {
  if constexpr (Products::kPermutedO) products.UnpermuteO(o, rows.count);
  FinishGemvItem(task, item, rows, o);
}

// One GEMV item by the walk ChooseGemvWalk picks, with the Products policy's products. Walks the
// policy can never take (MayChooseGemvWalk) are not compiled for it.
template <class Products>
HWY_INLINE void GemvItemWalk(const ForwardTask& task, const Item& item, float* scratch) {
  constexpr int R = Products::kRows;
  constexpr auto may = [](GemvWalk walk) { return MayChooseGemvWalk<R>(walk, Products::kBf16Dot); };
  const CacheView& cache = task.cache;
  const RowSet rows = prepare_rows(task, item, 1, scratch);
  const GemvWalk walk = ChooseGemvWalk<R>(cache, rows, Products::kBf16Dot);
  HWY_DASSERT(may(walk));  // else no walk below would run
  const Products products(task, item, rows, walk, scratch);
  float* o = scratch + task.scratch_layout.o;
  std::fill(o, o + rows.count * cache.value_size, 0.f);
  if constexpr (may(GemvWalk::stream_one_row)) {
    if (walk == GemvWalk::stream_one_row) {
      StreamKeys<typename Products::Value, typename Products::Key>(
          task, item, rows, o, products.StreamScores(), products.StreamValues());
      return FinishGemvWalk(products, task, item, rows, o);
    }
  }
#if ATTNRT_AVX512_TARGET
  if constexpr (may(GemvWalk::stream_four_rows)) {
    if (walk == GemvWalk::stream_four_rows) {
      StreamFourRows(task, item, rows, o, products.FourRowStreamScores(),
                     products.FourRowStreamValues());
      return FinishGemvWalk(products, task, item, rows, o);
    }
  }
#endif
  float* scores = scratch + task.scratch_layout.s;
  if constexpr (may(GemvWalk::chunks_by_four)) {
    if (walk == GemvWalk::chunks_by_four) {
      ForEachChunk<R, 4>(task, item, rows, scores, products.ScoresByFour(), products.ChunkValues());
      return FinishGemvWalk(products, task, item, rows, o);
    }
  }
  if constexpr (may(GemvWalk::chunks)) {
    ForEachChunk<R, kGemvKeyGroup<R>>(task, item, rows, scores, products.ScoresByKeyGroup(),
                                      products.ChunkValues());
    FinishGemvWalk(products, task, item, rows, o);
  }
}

// The f32 products of a GEMV item over a cache of T: the query rows scaled to log2 units, K and V
// converted in registers, f32 FMAs. On AVX-512 the by-four walks take the rows again as
// rotations (avx512/f32_four_row_scores-inl.h), after the row-major copies.
template <typename T, int R>
class GemvF32Products {
 public:
  static constexpr int kRows = R;
  static constexpr bool kBf16Dot = false;
  static constexpr bool kPermutedO = false;
  using Key = T;
  using Value = T;

  GemvF32Products(const ForwardTask& task, const Item& item, const RowSet& rows, GemvWalk walk,
                  float* scratch)
      : cache_(task.cache),
        queries_(scratch + task.scratch_layout.q),
        rotations_(queries_ + rows.count * cache_.key_size),
        o_(scratch + task.scratch_layout.o) {
    for (int m = 0; m < rows.count; ++m) {
      const float* q = query_row(task, item, m);
      for (int i = 0; i < cache_.key_size; ++i) {
        queries_[m * cache_.key_size + i] = q[i] * task.scale_log2;
      }
    }
#if ATTNRT_AVX512_TARGET
    if constexpr (R >= 3) {
      if (walk == GemvWalk::stream_four_rows || walk == GemvWalk::chunks_by_four) {
        for (int h = 0; h < item.num_kv_heads; ++h) {
          RotateRowsByFourF32<R>(queries_ + h * R * cache_.key_size, cache_.key_size,
                                 rotations_ + h * kRotatedRows * cache_.key_size);
        }
      }
    }
#else
    (void)walk;
#endif
  }

  auto StreamScores() const {
    return [this](int h, const T* const(&keys)[kStreamKeys]) {
      return ScoreFourKeysOneRow<T>(queries_ + h * cache_.key_size, cache_.key_size, keys);
    };
  }
  AddValuesF32<T> StreamValues() const {
    return {cache_.value_size};
  }

  auto ScoresByKeyGroup() const {
    return [this](int h, int count, const std::byte* const* tokens, float* scores) {
      ChunkScores<T, R>(queries_ + h * R * cache_.key_size, cache_.key_size, tokens,
                        cache_.key_offset, count, scores);
    };
  }
  auto ChunkValues() const {
    return [this](int h, const float* weights, const float* alpha, int count,
                  const std::byte* const* tokens) {
      AddChunkValues<T, R>(weights, alpha, count, tokens, cache_.value_offset, cache_.value_size,
                           o_ + h * R * cache_.value_size);
    };
  }

#if ATTNRT_AVX512_TARGET
  auto FourRowStreamScores() const {
    return [this](int h, const std::byte* const(&tokens)[kStreamKeys]) {
      const T* keys[kStreamKeys];
      for (int k = 0; k < kStreamKeys; ++k) {
        keys[k] = reinterpret_cast<const T*>(tokens[k]) + cache_.key_offset;
      }
      return VF{
          FourKeysFourRowsF32<T>(rotations_ + h * 4 * cache_.key_size, cache_.key_size, keys)};
    };
  }
  AddValuesFourRowsF32<T> FourRowStreamValues() const {
    return {cache_.value_offset, cache_.value_size};
  }
  auto ScoresByFour() const {
    return [this](int h, int count, const std::byte* const* tokens, float* scores) {
      ChunkScoresByFourF32<T, R>(rotations_ + h * kRotatedRows * cache_.key_size, cache_.key_size,
                                 tokens, cache_.key_offset, count, scores);
    };
  }
#endif

 private:
  static constexpr int kRotatedRows = 4 * ((R + 3) / 4);  // per head, padded with zero rows

  const CacheView& cache_;
  float* queries_;  // row-major, [rows][key_size]
  float* rotations_;
  float* o_;
};

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_WALK_INL_H_
