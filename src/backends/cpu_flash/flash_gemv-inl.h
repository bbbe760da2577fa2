// The GEMV path of CPU_FLASH, per Highway target: decode-like items with at most kGemvMaxRows
// rows per KV head (query tokens × the heads of one GQA group), over one or more KV heads. Head
// dimensions lie along SIMD lanes and K/V are converted in registers straight from the cache,
// chunk by chunk, so each byte of the group's K/V is read once for all its rows. Which walk an
// item takes (the chunk walk here, or a stream) is flash_dispatch-inl.h's table.

#if defined(ATTNRT_CPU_FLASH_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_INL_H_
#endif

#include <algorithm>
#include <limits>

#include "flash_dispatch-inl.h"
#include "flash_gemv_rows_stream-inl.h"
#include "flash_gemv_scores-inl.h"
#include "flash_gemv_stream-inl.h"
#include "flash_rows.h"
#include "flash_simd-inl.h"
#include "flash_softmax-inl.h"
#include "flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// Online softmax over one chunk of keys [first, first + count) for R rows, one row per scalar
// state, vectorised across the chunk's keys, with the rows interleaved so that their reduction
// chains overlap; leaves the weights in `scores` and each row's rescale in rows.alpha.
template <int R>
HWY_INLINE void ChunkSoftmax(const RowSet& rows, int first, int count, bool fully_visible,
                             float* HWY_RESTRICT scores) {
  const DF df;
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const VF end_of_chunk = hn::Set(df, static_cast<float>(first + count));
  VF row_max[R];
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    float* s = scores + m * kScoreStride;
    const VF begin = hn::Set(df, rows.begin[m]);
    const VF end = hn::Set(df, rows.end[m]);
    VF tile_max = neg_inf;
    for (int n = 0; n < count; n += kLanes) {
      const VF position = hn::Iota(df, static_cast<float>(first + n));
      auto visible = hn::Lt(position, end_of_chunk);
      if (!fully_visible) {
        visible = hn::And(visible, hn::And(hn::Ge(position, begin), hn::Lt(position, end)));
      }
      const VF x = hn::IfThenElse(visible, hn::Load(df, s + n), neg_inf);
      hn::Store(x, df, s + n);
      tile_max = hn::Max(tile_max, x);
    }
    row_max[m] = hn::Max(hn::Set(df, rows.max[m]), hn::MaxOfLanes(df, tile_max));
  }
  // The rows' old maxima and new bases, so that their rescales take one Exp2 per kLanes rows.
  constexpr int kPadded = kLanes * ((R + kLanes - 1) / kLanes);
  alignas(64) float old_max[kPadded] = {};
  alignas(64) float base[kPadded] = {};
  float chunk_sum[R];
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    const VF b = SoftmaxBase(df, row_max[m]);
    float* s = scores + m * kScoreStride;
    VF sum = hn::Zero(df);
    for (int n = 0; n < count; n += kLanes) {
      const VF p = SoftmaxWeights(df, hn::Load(df, s + n), b);
      hn::Store(p, df, s + n);
      sum = hn::Add(sum, p);
    }
    old_max[m] = rows.max[m];
    base[m] = hn::GetLane(b);
    rows.max[m] = hn::GetLane(row_max[m]);
    chunk_sum[m] = hn::GetLane(hn::SumOfLanes(df, sum));
  }
  alignas(64) float alpha[kPadded];
  for (int m = 0; m < R; m += kLanes) {
    hn::Store(SoftmaxRescale(df, hn::Load(df, old_max + m), hn::Load(df, base + m)), df, alpha + m);
  }
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    rows.alpha[m] = alpha[m];
    rows.sum[m] = RescaledSum(rows.sum[m], alpha[m], chunk_sum[m]);
  }
}

// out[m][j0, j0 + JV·lanes) = α_m · out[m][...] + Σ_n p[m][n] · v_n[...].
template <typename T, int R, int JV>
HWY_INLINE void ValuePass(const float* HWY_RESTRICT probabilities, const float* alpha, int count,
                          const std::byte* const* tokens, int value_offset, int value_size, int j0,
                          float* HWY_RESTRICT out) {
  const DF df;
  VF acc[R][JV];
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    const VF a = hn::Set(df, alpha[m]);
    HWY_UNROLL(8)
    for (int v = 0; v < JV; ++v) {
      acc[m][v] = hn::Mul(hn::LoadU(df, out + m * value_size + j0 + v * kLanes), a);
    }
  }
  for (int n = 0; n < count; ++n) {
    const T* value = reinterpret_cast<const T*>(tokens[n]) + value_offset + j0;
    VF x[JV];
    HWY_UNROLL(8)
    for (int v = 0; v < JV; ++v) x[v] = LoadF32(df, value + v * kLanes);
    HWY_UNROLL(8)
    for (int m = 0; m < R; ++m) {
      const VF p = hn::Set(df, probabilities[m * kScoreStride + n]);
      HWY_UNROLL(8)
      for (int v = 0; v < JV; ++v) acc[m][v] = hn::MulAdd(p, x[v], acc[m][v]);
    }
  }
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    HWY_UNROLL(8)
    for (int v = 0; v < JV; ++v) hn::StoreU(acc[m][v], df, out + m * value_size + j0 + v * kLanes);
  }
}

template <typename T, int R>
HWY_INLINE void ChunkValues(const float* probabilities, const float* alpha, int count,
                            const std::byte* const* tokens, int value_offset, int value_size,
                            float* out) {
  constexpr int kPass = std::clamp(kGemvAccumulators / R, 1, kMaxValueVectors);
  int j = 0;
  for (; j + kPass * kLanes <= value_size; j += kPass * kLanes) {
    ValuePass<T, R, kPass>(probabilities, alpha, count, tokens, value_offset, value_size, j, out);
  }
  for (; j + kLanes <= value_size; j += kLanes) {
    ValuePass<T, R, 1>(probabilities, alpha, count, tokens, value_offset, value_size, j, out);
  }
  for (; j < value_size; ++j) {
    for (int m = 0; m < R; ++m) {
      float o = out[m * value_size + j] * alpha[m];
      for (int n = 0; n < count; ++n) {
        const T* value = reinterpret_cast<const T*>(tokens[n]) + value_offset;
        o += probabilities[m * kScoreStride + n] * ScalarF32(value + j);
      }
      out[m * value_size + j] = o;
    }
  }
}

// Writes the rows (O row-major, value_size apart) to the output or the item's split partial.
HWY_INLINE void FinishGemvItem(const ForwardTask& task, const Item& item, const RowSet& rows,
                               const float* HWY_RESTRICT o) {
  const int value_size = task.cache.value_size;
  FinishRows(task, item, rows, [&](int m, int j) { return o[m * value_size + j]; });
}

// Score rows per KV head in a chunk's score buffer: R, or R rounded up to groups of 4 (the
// groups' padding rows get scores too). An item's heads fit kMaxRows of them.
template <int R>
inline constexpr int kScoreRows = R >= 3 ? 4 * ((R + 3) / 4) : R;

// Walks the item's keys in chunks of up to kGemvChunk keys. First the chunk is scored token by
// token across the item's KV heads: score(h, n, count, tokens, buffer) computes the scores of
// keys [n, n + count) of the chunk (count <= kGroup) for head h into `buffer`, so a block's page
// is read front to back, and each token's value lines are requested as its keys are read. Then
// values(h, first, count, tokens, buffer) runs the softmax and PV of each head over the chunk,
// now in cache. `tokens` holds each key's content address for head h. Memory streams through
// the hardware prefetchers: software prefetches of the next chunk into L2 take the L1 miss
// buffers those need (measured slower: docs/cpu-flash.md §6).
template <int kGroup, class Score, class Values>
HWY_INLINE void ForEachChunk(const ForwardTask& task, const Item& item, const RowSet& rows,
                             float* buffer, const Score& score, const Values& values) {
  const CacheView& cache = task.cache;
  const std::int64_t value_byte =
      static_cast<std::int64_t>(cache.value_offset) * cache.element_size;
  const int value_bytes = cache.value_size * cache.element_size;
  const int heads = item.num_kv_heads;
  const std::byte* base[kGemvChunk];
  const std::byte* tokens[kGemvChunk];
  for (int first = rows.keys.begin; first < rows.keys.end; first += kGemvChunk) {
    const int count = std::min(kGemvChunk, rows.keys.end - first);
    // A full chunk that every row sees whole is walked 4 ways interleaved.
    const bool interleave =
        count == kGemvChunk && first >= rows.max_begin && first + count <= rows.min_end;
    list_chunk_tokens(task, item, first, count, interleave ? kGemvChunkWays : 1, base);
    for (int n = 0; n < count; n += kGroup) {
      const int group = std::min(kGroup, count - n);
      for (int h = 0; h < heads; ++h) {
        const std::int64_t offset = h * cache.head_stride;
        for (int k = 0; k < group; ++k) tokens[k] = base[n + k] + offset;
        score(h, n, group, tokens, buffer);
        for (int k = 0; k < group; ++k) PrefetchBytes(tokens[k] + value_byte, value_bytes);
      }
    }
    for (int h = 0; h < heads; ++h) {
      const std::int64_t offset = h * cache.head_stride;
      for (int n = 0; n < count; ++n) tokens[n] = base[n] + offset;
      values(h, first, count, tokens, buffer);
    }
  }
}

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
      // Each head's rows again, as rotations (after the row-major copies).
      constexpr int kRotatedRows = 4 * ((R + 3) / 4);
      float* rotations = queries + rows.count * cache.key_size;
      for (int h = 0; h < item.num_kv_heads; ++h) {
        RotateRowsByFourF32<R>(queries + h * R * cache.key_size, cache.key_size,
                               rotations + h * kRotatedRows * cache.key_size);
      }
      if (walk == GemvWalk::stream_four_rows) {
        StreamFourRows(
            task, item, rows, o,
            [&](int h, const std::byte* const(&tokens)[kStreamKeys]) {
              const T* keys[kStreamKeys];
              for (int k = 0; k < kStreamKeys; ++k) {
                keys[k] = reinterpret_cast<const T*>(tokens[k]) + cache.key_offset;
              }
              return VF{
                  FourKeysFourRowsF32<T>(rotations + h * 4 * cache.key_size, cache.key_size, keys)};
            },
            AddValuesFourRowsF32<T>{cache.value_offset, cache.value_size});
        return FinishGemvItem(task, item, rows, o);
      }
      ForEachChunk<4>(
          task, item, rows, scores,
          [&](int h, int n, int count, const std::byte* const* tokens, float* buffer) {
            ChunkScoresByFourF32<T, R>(rotations + h * kRotatedRows * cache.key_size,
                                       cache.key_size, tokens, cache.key_offset, count,
                                       buffer + h * kScoreRows<R> * kScoreStride + n);
          },
          values);
      return FinishGemvItem(task, item, rows, o);
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

template <typename T>
HWY_INLINE void GemvItem(const ForwardTask& task, const Item& item, float* scratch) {
  static_assert(kGemvMaxRows == 8);
  switch (item.rows_per_kv_head()) {
    case 1:
      return GemvItemRows<T, 1>(task, item, scratch);
    case 2:
      return GemvItemRows<T, 2>(task, item, scratch);
    case 3:
      return GemvItemRows<T, 3>(task, item, scratch);
    case 4:
      return GemvItemRows<T, 4>(task, item, scratch);
    case 5:
      return GemvItemRows<T, 5>(task, item, scratch);
    case 6:
      return GemvItemRows<T, 6>(task, item, scratch);
    case 7:
      return GemvItemRows<T, 7>(task, item, scratch);
    default:
      return GemvItemRows<T, 8>(task, item, scratch);
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_INL_H_
