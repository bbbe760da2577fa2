// Scores of the GEMV path, per Highway target: q·k for a chunk's keys and the few query rows of
// one KV head. Each (row, key) accumulates along the head dimension and a transpose-sum finishes
// a vector of them at once. (AVX-512, 3+ rows: avx512/f32_four_row_scores-inl.h.)

#if defined(ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
#endif

#include <algorithm>

#include "flash_simd-inl.h"
#include "flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// Accumulator registers a GEMV tile may use (32 vector registers on AVX-512 and NEON, 16 else).
#if ATTNRT_AVX512_TARGET || HWY_TARGET == HWY_NEON
inline constexpr int kGemvAccumulators = 16;
inline constexpr int kMaxValueVectors = 8;
#else
inline constexpr int kGemvAccumulators = 8;
inline constexpr int kMaxValueVectors = 4;
#endif
inline constexpr int kLanes = static_cast<int>(hn::MaxLanes(DF()));
// Floats per row of a chunk's score buffer.
inline constexpr int kScoreStride = kGemvChunk;
static_assert(kScoreStride % kLanes == 0);

// Lane i of the result is the sum of the lanes of v[i] (i < lanes): pairwise folds with
// ConcatEven/Odd keep each vector's partial sums in contiguous lanes, so log2(lanes) levels finish
// all of them.
HWY_INLINE VF TransposeSum(DF df, VF (&v)[kLanes]) {
#if HWY_TARGET == HWY_SCALAR
  (void)df;
  return v[0];
#else
  HWY_UNROLL(8)
  for (int n = kLanes; n > 1; n /= 2) {
    HWY_UNROLL(16)
    for (int i = 0; i < n / 2; ++i) {
      v[i] = hn::Add(hn::ConcatEven(df, v[2 * i + 1], v[2 * i]),
                     hn::ConcatOdd(df, v[2 * i + 1], v[2 * i]));
    }
  }
  return v[0];
#endif
}

// Lanes 0..N-1 of the result are the sums of the lanes of v[0..N-1] (N a power of two at most
// the lane count): TransposeSum's folds, and once one vector is left, folds with zeros.
template <int N>
HWY_INLINE VF TransposeSumOf(DF df, VF* v) {
  static_assert(N >= 1 && (N & (N - 1)) == 0 && N <= kLanes);
#if HWY_TARGET == HWY_SCALAR
  (void)df;
  return v[0];
#else
  int n = N;
  HWY_UNROLL(8)
  for (int width = kLanes; width > 1; width /= 2) {
    if (n > 1) {
      // n is a constant once the outer loop is unrolled: this one unrolls without a pragma.
      for (int i = 0; i < n / 2; ++i) {
        v[i] = hn::Add(hn::ConcatEven(df, v[2 * i + 1], v[2 * i]),
                       hn::ConcatOdd(df, v[2 * i + 1], v[2 * i]));
      }
      n /= 2;
    } else {
      const VF zero = hn::Zero(df);
      v[0] = hn::Add(hn::ConcatEven(df, zero, v[0]), hn::ConcatOdd(df, zero, v[0]));
    }
  }
  return v[0];
#endif
}

// Lanes 0-3 of the result (on AVX-512, every block of 4) are the sums of the lanes of v[0..3]:
// TransposeSumOf<4>, but on AVX-512 in-block unpacks and two block swaps, which are shorter than
// its four levels of two-source permutes (the stream path waits on this every step).
HWY_INLINE VF SumsOfFour(DF df, VF* v) {
#if ATTNRT_AVX512_TARGET
  (void)df;
  return VF{LaneSumsOfFour(v[0].raw, v[1].raw, v[2].raw, v[3].raw)};
#elif HWY_TARGET == HWY_SCALAR
  (void)df;
  return v[0];  // never called: the scalar target has fewer lanes than sums
#else
  return TransposeSumOf<4>(df, v);
#endif
}

// The smallest power of two >= n.
inline constexpr int PowerOfTwoAtLeast(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// Keys a GEMV score call takes for R < 3 rows: 4, which ForEachChunk's interleaved walk makes
// the same row of four blocks, so each head's K is read block by block in address order, four
// pages in lockstep (docs/cpu-flash.md §6). Needs 4·R accumulators.
template <int R>
inline constexpr int kGemvKeyGroup = std::min(4, std::max(1, kLanes / R));

// Scores of KB keys for R rows: scores[m * kScoreStride + n + b] = q_m · k_b (log2 units).
template <typename T, int R, int KB>
HWY_INLINE void ScoreKeys(const float* HWY_RESTRICT queries, int key_size,
                          const std::byte* const* tokens, int key_offset, int n,
                          float* HWY_RESTRICT scores) {
  constexpr int kGroups = (R * KB + kLanes - 1) / kLanes;
  const DF df;
  const T* keys[KB];
  for (int b = 0; b < KB; ++b) {
    keys[b] = reinterpret_cast<const T*>(tokens[n + b]) + key_offset;
  }
  VF acc[kGroups][kLanes];
  HWY_UNROLL(16)
  for (int i = 0; i < kGroups * kLanes; ++i) acc[i / kLanes][i % kLanes] = hn::Zero(df);
  int i = 0;
  for (; i + kLanes <= key_size; i += kLanes) {
    VF q[R];
    HWY_UNROLL(8)
    for (int m = 0; m < R; ++m) q[m] = hn::LoadU(df, queries + m * key_size + i);
    HWY_UNROLL(16)
    for (int b = 0; b < KB; ++b) {
      const VF k = LoadF32(df, keys[b] + i);
      HWY_UNROLL(8)
      for (int m = 0; m < R; ++m) {
        VF& a = acc[(b * R + m) / kLanes][(b * R + m) % kLanes];
        a = hn::MulAdd(q[m], k, a);
      }
    }
  }
  alignas(64) float sums[kGroups * kLanes];
  if constexpr (kGroups == 1) {
    hn::Store(TransposeSumOf<PowerOfTwoAtLeast(R * KB)>(df, acc[0]), df, sums);
  } else {
    HWY_UNROLL(8)
    for (int g = 0; g < kGroups; ++g) {
      hn::Store(TransposeSum(df, acc[g]), df, sums + g * kLanes);
    }
  }
  for (int b = 0; b < KB; ++b) {
    for (int m = 0; m < R; ++m) {
      float s = sums[b * R + m];
      for (int t = i; t < key_size; ++t) s += queries[m * key_size + t] * ScalarF32(keys[b] + t);
      scores[m * kScoreStride + n + b] = s;
    }
  }
}

template <typename T, int R>
HWY_INLINE void ChunkScores(const float* queries, int key_size, const std::byte* const* tokens,
                            int key_offset, int count, float* scores) {
  constexpr int kKeysPerBlock = kGemvKeyGroup<R>;
  int n = 0;
  for (; n + kKeysPerBlock <= count; n += kKeysPerBlock) {
    ScoreKeys<T, R, kKeysPerBlock>(queries, key_size, tokens, key_offset, n, scores);
  }
  for (; n < count; ++n) {
    ScoreKeys<T, R, 1>(queries, key_size, tokens, key_offset, n, scores);
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
