// The score building blocks of the AVX512-BF16 GEMV path (vdpbf16ps: 32 bf16 products summed
// into 16 f32 lanes per instruction): query rows packed to bf16, q·k for a few rows and keys, and
// for 4-row groups the "rotations" that avoid a horizontal sum per key. AVX-512 only.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_SCORES_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_SCORES_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_SCORES_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "backends/cpu_flash/avx512/f32_four_row_scores-inl.h"
#include "backends/cpu_flash/flash_gemv_scores-inl.h"
#include "backends/cpu_flash/flash_rows.h"
#include "backends/cpu_flash/flash_simd-inl.h"
#include "backends/cpu_flash/flash_types.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// Functions that use vdpbf16ps (Highway's AVX3 and AVX3_DL targets do not enable AVX512-BF16); the
// GEMV bf16 header undefines it after its last use.
#define ATTNRT_BF16_DOT __attribute__((target("avx512bf16")))

// Query rows × scale, rounded to bf16 (ties to even).
ATTNRT_BF16_DOT HWY_INLINE void PackQueriesBf16(const ForwardTask& task, const Item& item, int rows,
                                                std::uint16_t* HWY_RESTRICT out) {
  const int key_size = task.cache.key_size;
  const __m512 scale = _mm512_set1_ps(task.scale_log2);
  for (int m = 0; m < rows; ++m) {
    const float* q = query_row(task, item, m);
    for (int i = 0; i < key_size; i += 32) {
      const __m512 lo = _mm512_mul_ps(_mm512_loadu_ps(q + i), scale);
      const __m512 hi = _mm512_mul_ps(_mm512_loadu_ps(q + i + 16), scale);
      _mm512_storeu_si512(out + m * key_size + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

// Lane b·R + m of the result is row m · key b (R·KB <= lanes): the rows' bf16 products with
// each key, summed per (row, key) and folded once.
template <int R, int KB>
ATTNRT_BF16_DOT HWY_INLINE VF RowKeySumsBf16(const std::uint16_t* HWY_RESTRICT queries,
                                             int key_size, const std::uint16_t* const (&keys)[KB]) {
  constexpr int kSums = PowerOfTwoAtLeast(R * KB);
  static_assert(kSums <= kLanes);
  const DF df;
  VF acc[kSums];
  HWY_UNROLL(16)
  for (int i = 0; i < kSums; ++i) acc[i] = hn::Zero(df);
  for (int i = 0; i < key_size; i += 32) {
    __m512i q[R];
    HWY_UNROLL(8)
    for (int m = 0; m < R; ++m) q[m] = _mm512_loadu_si512(queries + m * key_size + i);
    HWY_UNROLL(16)
    for (int b = 0; b < KB; ++b) {
      const __m512i k = _mm512_loadu_si512(keys[b] + i);
      HWY_UNROLL(8)
      for (int m = 0; m < R; ++m) {
        acc[b * R + m].raw = _mm512_dpbf16_ps(acc[b * R + m].raw, (__m512bh)q[m], (__m512bh)k);
      }
    }
  }
  if constexpr (kSums == 4) return SumsOfFour(df, acc);
  return TransposeSumOf<kSums>(df, acc);
}

// Scores of keys [n, n + KB) of `tokens` for R rows: scores[m * kScoreStride + n + b].
template <int R, int KB>
ATTNRT_BF16_DOT HWY_INLINE void ScoreKeysBf16(const std::uint16_t* HWY_RESTRICT queries,
                                              int key_size, const std::byte* const* tokens,
                                              int key_offset, int n, float* HWY_RESTRICT scores) {
  const std::uint16_t* keys[KB];
  for (int b = 0; b < KB; ++b) {
    keys[b] = reinterpret_cast<const std::uint16_t*>(tokens[n + b]) + key_offset;
  }
  alignas(64) float sums[kLanes];
  hn::Store(RowKeySumsBf16<R, KB>(queries, key_size, keys), DF(), sums);
  for (int b = 0; b < KB; ++b) {
    for (int m = 0; m < R; ++m) scores[m * kScoreStride + n + b] = sums[b * R + m];
  }
}

// Scores for groups of 4 rows without broadcasting keys: a key's 32-entry chunk is used as
// loaded, against 4 "rotations" of the rows, where lane block j (8 entries) of rotation s holds
// row (j + s) % 4. Accumulator s then sums row (j + s) % 4 in block j; rotating it back by s
// blocks and adding the four gives block r = row r, and two in-lane folds finish 4 keys × 4 rows.
// `rotated` holds, per group, [key_size / 32][4 rotations][32] bf16.
// Lane b of block r of the result is row r · key b.
ATTNRT_BF16_DOT HWY_INLINE __m512 FourKeysFourRows(const std::uint16_t* HWY_RESTRICT rotated,
                                                   int key_size,
                                                   const std::uint16_t* const (&keys)[4]) {
  __m512 acc[4][4];
  HWY_UNROLL(16)
  for (int i = 0; i < 16; ++i) acc[i / 4][i % 4] = _mm512_setzero_ps();
  for (int c = 0; c < key_size / 32; ++c) {
    __m512i k[4];
    HWY_UNROLL(4)
    for (int b = 0; b < 4; ++b) k[b] = _mm512_loadu_si512(keys[b] + c * 32);
    HWY_UNROLL(4)
    for (int s = 0; s < 4; ++s) {
      const __m512bh q = (__m512bh)_mm512_loadu_si512(rotated + (c * 4 + s) * 32);
      HWY_UNROLL(4)
      for (int b = 0; b < 4; ++b) acc[b][s] = _mm512_dpbf16_ps(acc[b][s], q, (__m512bh)k[b]);
    }
  }
  return FourByFour(RowsInBlocks(acc[0]), RowsInBlocks(acc[1]), RowsInBlocks(acc[2]),
                    RowsInBlocks(acc[3]));
}

// FourKeysFourRows, stored as the 4 keys' scores of each row.
ATTNRT_BF16_DOT HWY_INLINE void ScoreFourKeysFourRows(const std::uint16_t* HWY_RESTRICT rotated,
                                                      int key_size,
                                                      const std::uint16_t* const (&keys)[4],
                                                      float* HWY_RESTRICT scores) {
  StoreRowsOfFour(FourKeysFourRows(rotated, key_size, keys), scores);
}

// Row-major bf16 rows [R][key_size] → per group of 4 rows (zero rows pad the last) the four
// rotations of every 32-entry chunk.
template <int R>
HWY_INLINE void RotateRowsByFour(const std::uint16_t* rows, int key_size,
                                 std::uint16_t* HWY_RESTRICT out) {
  constexpr int kGroups = (R + 3) / 4;
  for (int g = 0; g < kGroups; ++g) {
    std::uint16_t* group = out + g * 4 * key_size;
    for (int c = 0; c < key_size / 32; ++c) {
      for (int s = 0; s < 4; ++s) {
        for (int j = 0; j < 4; ++j) {
          const int m = 4 * g + (j + s) % 4;
          for (int e = 0; e < 8; ++e) {
            const int entry = c * 32 + j * 8 + e;
            group[(c * 4 + s) * 32 + j * 8 + e] = m < R ? rows[m * key_size + entry] : 0;
          }
        }
      }
    }
  }
}

// Scores of a chunk's `count` keys for R >= 3 rows (groups of 4), 4 keys at a time; the last
// block repeats the last key (its extra scores land past `count`, where the softmax masks).
template <int R>
ATTNRT_BF16_DOT HWY_INLINE void ChunkScoresByFour(const std::uint16_t* rotated, int key_size,
                                                  const std::byte* const* tokens, int key_offset,
                                                  int count, float* scores) {
  static_assert(kGemvChunk % 4 == 0 && kScoreStride >= kGemvChunk);
  constexpr int kGroups = (R + 3) / 4;
  for (int n = 0; n < count; n += 4) {
    const std::uint16_t* keys[4];
    for (int b = 0; b < 4; ++b) {
      keys[b] =
          reinterpret_cast<const std::uint16_t*>(tokens[std::min(n + b, count - 1)]) + key_offset;
    }
    for (int g = 0; g < kGroups; ++g) {
      ScoreFourKeysFourRows(rotated + g * 4 * key_size, key_size, keys,
                            scores + 4 * g * kScoreStride + n);
    }
  }
}
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_SCORES_INL_H_
