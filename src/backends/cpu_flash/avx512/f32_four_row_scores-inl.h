// AVX-512 scores of the GEMV path for groups of 4 query rows, with f32 products: the rows sit in
// 128-bit lane blocks ("rotations"), so no horizontal sum per key is needed. The bf16 dot-product
// scores (bf16_scores-inl.h) fold their sums the same way.

#if defined(ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROW_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROW_SCORES_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROW_SCORES_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROW_SCORES_INL_H_
#endif

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

#include <algorithm>

#include "backends/cpu_flash/avx512/vector_ops-inl.h"
#include "backends/cpu_flash/flash_gemv_scores-inl.h"
#include "backends/cpu_flash/flash_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

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

#endif  // ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROW_SCORES_INL_H_
