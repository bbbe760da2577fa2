// Scores of the GEMV path, per Highway target: q·k for a chunk's keys and the few query rows of
// one KV head. Generic: each (row, key) accumulates along the head dimension and a transpose-sum
// finishes a vector of them at once. AVX-512, 3+ rows: the rows sit in 128-bit lane blocks
// ("rotations") so no horizontal sum per key is needed.

#if defined(ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
#endif

#include <algorithm>

#include "flash_simd-inl.h"
#include "flash_types.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

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

#if ATTNRT_AVX512_TARGET
// Block r of every input k_b holds 4 partial sums of row r; lane b of block r of the result is
// row r · key b.
HWY_INLINE __m512 FourByFour(__m512 k0, __m512 k1, __m512 k2, __m512 k3) {
  const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(k0, k1), _mm512_unpackhi_ps(k0, k1));
  const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(k2, k3), _mm512_unpackhi_ps(k2, k3));
  const __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(t01), _mm512_castps_pd(t23));
  const __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(t01), _mm512_castps_pd(t23));
  return _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));
}
#endif

// Lanes 0-3 of the result (on AVX-512, every block of 4) are the sums of the lanes of v[0..3]:
// TransposeSumOf<4>, but on AVX-512 FourByFour's in-block unpacks and two block swaps, which are
// shorter than its four levels of two-source permutes (the stream path waits on this every step).
HWY_INLINE VF SumsOfFour(DF df, VF* v) {
#if ATTNRT_AVX512_TARGET
  (void)df;
  __m512 sums = FourByFour(v[0].raw, v[1].raw, v[2].raw, v[3].raw);
  sums = _mm512_add_ps(sums, _mm512_shuffle_f32x4(sums, sums, 0x4E));
  return VF{_mm512_add_ps(sums, _mm512_shuffle_f32x4(sums, sums, 0xB1))};
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

#if ATTNRT_AVX512_TARGET
// AVX-512 scores for groups of 4 rows without horizontal sums per key: lane block j (4 floats)
// of rotation s holds row (j + s) % 4, so accumulator s sums row (j + s) % 4 in block j.
// RowsInBlocks rotates them back (block r = row r) and FourByFour folds 4 keys × 4 rows
// with in-lane shuffles. Used by the f32 and the bf16 dot-product paths.
HWY_INLINE __m512 RowsInBlocks(const __m512 (&acc)[4]) {
  __m512 sum = _mm512_add_ps(acc[0], _mm512_shuffle_f32x4(acc[1], acc[1], 0x93));
  sum = _mm512_add_ps(sum, _mm512_shuffle_f32x4(acc[2], acc[2], 0x4E));
  return _mm512_add_ps(sum, _mm512_shuffle_f32x4(acc[3], acc[3], 0x39));
}

// Block r of `sums` (lane b: row r · key b) to row r of a chunk's score buffer.
HWY_INLINE void StoreRowsOfFour(__m512 sums, float* HWY_RESTRICT scores) {
  _mm_storeu_ps(scores, _mm512_extractf32x4_ps(sums, 0));
  _mm_storeu_ps(scores + kScoreStride, _mm512_extractf32x4_ps(sums, 1));
  _mm_storeu_ps(scores + 2 * kScoreStride, _mm512_extractf32x4_ps(sums, 2));
  _mm_storeu_ps(scores + 3 * kScoreStride, _mm512_extractf32x4_ps(sums, 3));
}

// f32 rows [R][key_size] (key_size a multiple of 16) → per group of 4 rows (zero rows pad the
// last) the four rotations of every 16-entry chunk: [key_size / 16][4][16].
template <int R>
HWY_INLINE void RotateRowsByFourF32(const float* rows, int key_size, float* HWY_RESTRICT out) {
  for (int g = 0; g < (R + 3) / 4; ++g) {
    float* group = out + g * 4 * key_size;
    for (int c = 0; c < key_size / 16; ++c) {
      for (int s = 0; s < 4; ++s) {
        for (int j = 0; j < 4; ++j) {
          const int m = 4 * g + (j + s) % 4;
          for (int e = 0; e < 4; ++e) {
            group[(c * 4 + s) * 16 + j * 4 + e] =
                m < R ? rows[m * key_size + c * 16 + j * 4 + e] : 0.f;
          }
        }
      }
    }
  }
}

// Lane b of block r of the result is row r · key b.
template <typename T>
HWY_INLINE __m512 FourKeysFourRowsF32(const float* HWY_RESTRICT rotated, int key_size,
                                      const T* const (&keys)[4]) {
  const DF df;
  __m512 acc[4][4];
  HWY_UNROLL(16)
  for (int i = 0; i < 16; ++i) acc[i / 4][i % 4] = _mm512_setzero_ps();
  for (int c = 0; c < key_size / 16; ++c) {
    __m512 k[4];
    HWY_UNROLL(4)
    for (int b = 0; b < 4; ++b) k[b] = LoadF32(df, keys[b] + c * 16).raw;
    HWY_UNROLL(4)
    for (int s = 0; s < 4; ++s) {
      const __m512 q = _mm512_load_ps(rotated + (c * 4 + s) * 16);
      HWY_UNROLL(4)
      for (int b = 0; b < 4; ++b) acc[b][s] = _mm512_fmadd_ps(q, k[b], acc[b][s]);
    }
  }
  return FourByFour(RowsInBlocks(acc[0]), RowsInBlocks(acc[1]), RowsInBlocks(acc[2]),
                    RowsInBlocks(acc[3]));
}

// Scores of a chunk's keys for R >= 3 rows in groups of 4, 4 keys at a time; the last block
// repeats the last key (its extra scores land past `count`, where the softmax masks).
template <typename T, int R>
HWY_INLINE void ChunkScoresByFourF32(const float* rotated, int key_size,
                                     const std::byte* const* tokens, int key_offset, int count,
                                     float* scores) {
  for (int n = 0; n < count; n += 4) {
    const T* keys[4];
    for (int b = 0; b < 4; ++b) {
      keys[b] = reinterpret_cast<const T*>(tokens[std::min(n + b, count - 1)]) + key_offset;
    }
    for (int g = 0; g < (R + 3) / 4; ++g) {
      StoreRowsOfFour(FourKeysFourRowsF32<T>(rotated + g * 4 * key_size, key_size, keys),
                      scores + 4 * g * kScoreStride + n);
    }
  }
}
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_SCORES_INL_H_
