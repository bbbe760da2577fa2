// The one-row GEMV path of CPU_FLASH, per Highway target: items with one query row per KV head
// (a decode token without GQA). It reads every token record once, front to back: for each group of
// up to four keys and each KV head, the K lines are scored, the online softmax is updated, and the
// V lines that follow them are summed into O at once, while they are in L1. The chunk walk of
// flash_gemv_chunks-inl.h instead sums V in a second pass from L2, which leaves DRAM idle
// meanwhile.

#if defined(ATTNRT_CPU_FLASH_GEMV_STREAM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_STREAM_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_STREAM_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_STREAM_INL_H_
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

// Keys a stream step takes: the same row of the four blocks an interleaved chunk walks.
inline constexpr int kStreamKeys = 4;

// o[j] += Σ_{k < C} p[k] · v_k[j] for j < value_size.
template <typename T, int C>
HWY_INLINE void AddWeightedValues(const float* HWY_RESTRICT p,
                                  const T* const (&values)[kStreamKeys], int value_size,
                                  float* HWY_RESTRICT o) {
  const DF df;
  VF weight[C];
  HWY_UNROLL(4)
  for (int k = 0; k < C; ++k) weight[k] = hn::Set(df, p[k]);
  int j = 0;
  for (; j + kLanes <= value_size; j += kLanes) {
    VF acc = hn::LoadU(df, o + j);
    HWY_UNROLL(4)
    for (int k = 0; k < C; ++k) acc = hn::MulAdd(weight[k], LoadF32(df, values[k] + j), acc);
    hn::StoreU(acc, df, o + j);
  }
  for (; j < value_size; ++j) {
    for (int k = 0; k < C; ++k) o[j] += p[k] * ScalarF32(values[k] + j);
  }
}

// The f32-product PV of a stream step of `count` keys, for StreamKeys.
template <typename T>
struct AddValuesF32 {
  int value_size;
  HWY_INLINE void operator()(const float* HWY_RESTRICT p, int count,
                             const T* const (&values)[kStreamKeys], float* HWY_RESTRICT o) const {
    static_assert(kStreamKeys == 4);
    switch (count) {
      case 4:
        return AddWeightedValues<T, 4>(p, values, value_size, o);
      case 3:
        return AddWeightedValues<T, 3>(p, values, value_size, o);
      case 2:
        return AddWeightedValues<T, 2>(p, values, value_size, o);
      default:
        return AddWeightedValues<T, 1>(p, values, value_size, o);
    }
  }
};

// Lanes 0-3 of the result hold the max (sum) of lanes 0-3 of v, as does every block of 4. The
// scalar target, with fewer lanes than keys per step, never streams.
#if HWY_TARGET == HWY_SCALAR
HWY_INLINE VF MaxOfFours(VF v) {
  return v;
}
HWY_INLINE VF SumOfFours(VF v) {
  return v;
}
#else
HWY_INLINE VF MaxOfFours(VF v) {
  v = hn::Max(v, hn::Shuffle2301(v));
  return hn::Max(v, hn::Shuffle1032(v));
}
HWY_INLINE VF SumOfFours(VF v) {
  v = hn::Add(v, hn::Shuffle2301(v));
  return hn::Add(v, hn::Shuffle1032(v));
}
#endif

// q · k_b in lane b (b < 4) for one query row (log2 units) and four keys, f32 FMAs with two
// accumulators per key to halve the dependency chains.
template <typename T>
HWY_INLINE VF ScoreFourKeysOneRow(const float* HWY_RESTRICT query, int key_size,
                                  const T* const (&keys)[kStreamKeys]) {
  const DF df;
  VF acc[2 * kStreamKeys];
  HWY_UNROLL(8)
  for (int a = 0; a < 2 * kStreamKeys; ++a) acc[a] = hn::Zero(df);
  int i = 0;
  for (; i + 2 * kLanes <= key_size; i += 2 * kLanes) {
    const VF q0 = hn::LoadU(df, query + i);
    const VF q1 = hn::LoadU(df, query + i + kLanes);
    HWY_UNROLL(4)
    for (int b = 0; b < kStreamKeys; ++b) {
      acc[2 * b] = hn::MulAdd(q0, LoadF32(df, keys[b] + i), acc[2 * b]);
      acc[2 * b + 1] = hn::MulAdd(q1, LoadF32(df, keys[b] + i + kLanes), acc[2 * b + 1]);
    }
  }
  for (; i + kLanes <= key_size; i += kLanes) {
    const VF q = hn::LoadU(df, query + i);
    HWY_UNROLL(4)
    for (int b = 0; b < kStreamKeys; ++b) {
      acc[2 * b] = hn::MulAdd(q, LoadF32(df, keys[b] + i), acc[2 * b]);
    }
  }
  VF sums[kStreamKeys];
  HWY_UNROLL(4)
  for (int b = 0; b < kStreamKeys; ++b) sums[b] = hn::Add(acc[2 * b], acc[2 * b + 1]);
  static_assert(kStreamKeys == 4);
  VF result = SumsOfFour(df, sums);
  if (i < key_size) {
    alignas(64) float tail[kLanes] = {};
    for (int b = 0; b < kStreamKeys; ++b) {
      for (int t = i; t < key_size; ++t) tail[b] += query[t] * ScalarF32(keys[b] + t);
    }
    result = hn::Add(result, hn::Load(df, tail));
  }
  return result;
}

// Walks the item's keys (one row per KV head, so nothing inside rows.keys is masked) in chunks
// of kGemvChunk, each full chunk listed 4 ways interleaved as in ForEachChunk, four keys a step.
// Per step and head: score(h, keys) returns q · k_b (log2 units) in lane b for the head's four
// key pointers; the row's online-softmax state (flash_softmax-inl.h) raises its max only when the
// step's max exceeds it (rare after the first keys), and only then rescales O; add_values(weights,
// count, values, head_o) sums the step's V lines (weight b in weights[b]) into O at once.
template <typename T, typename K, class Score, class AddValues>
HWY_INLINE void StreamKeys(const ForwardTask& task, const Item& item, const RowSet& rows,
                           float* HWY_RESTRICT o, const Score& score, const AddValues& add_values) {
  const CacheView& cache = task.cache;
  const DF df;
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const int heads = item.num_kv_heads;
  const std::byte* base[kGemvChunk];
  alignas(64) float weights[kLanes];
  for (int first = rows.keys.begin; first < rows.keys.end; first += kGemvChunk) {
    const int count = std::min(kGemvChunk, rows.keys.end - first);
    list_chunk_tokens(task, item, first, count, count == kGemvChunk ? kGemvChunkWays : 1, base);
    for (int n = 0; n < count; n += kStreamKeys) {
      const int group = std::min(kStreamKeys, count - n);
      const auto live = hn::FirstN(df, static_cast<std::size_t>(group));
      for (int h = 0; h < heads; ++h) {
        const K* keys[kStreamKeys];
        const T* values[kStreamKeys];
        for (int k = 0; k < kStreamKeys; ++k) {
          const std::byte* token = base[n + std::min(k, group - 1)] + h * cache.head_stride;
          keys[k] = reinterpret_cast<const K*>(token) + cache.key_offset;
          values[k] = reinterpret_cast<const T*>(token) + cache.value_offset;
        }
        const VF s = hn::IfThenElse(live, score(h, keys), neg_inf);
        const float group_max = hn::GetLane(MaxOfFours(s));
        float* head_o = o + h * cache.value_size;
        if (group_max > rows.max[h]) {
          // The row's first keys rescale by 0, with O still zero: no pass over it then.
          const float alpha = SoftmaxRescale(rows.max[h], group_max);
          if (rows.sum[h] > 0.f) {
            for (int j = 0; j < cache.value_size; ++j) head_o[j] *= alpha;
          }
          rows.sum[h] *= alpha;
          rows.max[h] = group_max;
        }
        const VF p = SoftmaxWeights(df, s, hn::Set(df, SoftmaxBase(rows.max[h])));
        hn::Store(p, df, weights);
        rows.sum[h] += hn::GetLane(SumOfFours(p));
        add_values(weights, group, values, head_o);
      }
    }
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_STREAM_INL_H_
