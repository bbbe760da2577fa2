// The chunk walk of CPU_FLASH's GEMV path, per Highway target: a chunk of keys is scored for the
// rows of each KV head, its online softmax runs (one scalar state per row), then its values are
// summed into O from L2. The products are the caller's (GemvItemWalk's policy, f32 FMAs or bf16
// dot products); flash_dispatch-inl.h says when this walk runs.

#if defined(ATTNRT_CPU_FLASH_GEMV_CHUNKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_CHUNKS_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_CHUNKS_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_CHUNKS_INL_H_
#endif

#include <algorithm>
#include <limits>

#include "flash_gemv_scores-inl.h"
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

// ValuePass over every value entry of the R rows, f32 products (the scalar tail past the last
// whole vector).
template <typename T, int R>
HWY_INLINE void AddChunkValues(const float* probabilities, const float* alpha, int count,
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
  FinishRows(task, item, rows, [&](int m, float scale, float* HWY_RESTRICT dst) {
    ScaleRow(o + m * value_size, value_size, scale, dst);
  });
}

// Score rows per KV head in a chunk's score buffer: R, or R rounded up to groups of 4 (the
// groups' padding rows get scores too). An item's heads fit kMaxRows of them.
template <int R>
inline constexpr int kScoreRows = R >= 3 ? 4 * ((R + 3) / 4) : R;

// Walks the item's keys (R rows per KV head) in chunks of up to kGemvChunk keys. First the chunk
// is scored token by token across the item's KV heads: score(h, count, tokens, scores) computes
// the scores of `count` <= kGroup keys for head h's rows (row m at scores[m * kScoreStride]), so
// a block's page is read front to back, and each token's value lines are requested as its keys are
// read. Then per head the chunk's online softmax runs (ChunkSoftmax) and add_values(h, weights,
// alpha, count, tokens) sums its values, now in cache, into the head's O (weights: the head's
// rows kScoreStride apart; alpha: each row's rescale of O). `tokens` holds each key's content
// address for head h. Memory streams through the hardware prefetchers: software prefetches of
// the next chunk into L2 take the L1 miss buffers those need (measured slower: docs/cpu-flash.md
// §6).
template <int R, int kGroup, class Score, class AddValues>
HWY_INLINE void ForEachChunk(const ForwardTask& task, const Item& item, const RowSet& rows,
                             float* buffer, const Score& score, const AddValues& add_values) {
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
    const bool fully_visible = first >= rows.max_begin && first + count <= rows.min_end;
    const bool interleave = count == kGemvChunk && fully_visible;
    list_chunk_tokens(task, item, first, count, interleave ? kGemvChunkWays : 1, base);
    for (int n = 0; n < count; n += kGroup) {
      const int group = std::min(kGroup, count - n);
      for (int h = 0; h < heads; ++h) {
        const std::int64_t offset = h * cache.head_stride;
        for (int k = 0; k < group; ++k) tokens[k] = base[n + k] + offset;
        score(h, group, tokens, buffer + h * kScoreRows<R> * kScoreStride + n);
        for (int k = 0; k < group; ++k) PrefetchBytes(tokens[k] + value_byte, value_bytes);
      }
    }
    for (int h = 0; h < heads; ++h) {
      const std::int64_t offset = h * cache.head_stride;
      for (int n = 0; n < count; ++n) tokens[n] = base[n] + offset;
      const RowSet head = slice_rows(rows, h * R, R);
      float* head_scores = buffer + h * kScoreRows<R> * kScoreStride;
      ChunkSoftmax<R>(head, first, count, fully_visible, head_scores);
      add_values(h, head_scores, head.alpha, count, tokens);
    }
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_CHUNKS_INL_H_
