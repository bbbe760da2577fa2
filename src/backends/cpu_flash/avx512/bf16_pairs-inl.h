// How a bf16 GEMM item (bf16_pair_operands-inl.h) lays out its operands, packed with AVX-512: the
// queries and the softmax weights as bf16 pairs along the columns of the B operand, the keys as
// cached, the values transposed so that a row of A holds one value entry over the tile's keys.
// The layouts are those of AMX tiles (amx/bf16_tiles-inl.h), which vdpbf16ps reads as well
// (bf16_pair_gemm-inl.h). x86 AVX-512 targets only; empty elsewhere.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_PAIRS_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_PAIRS_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_PAIRS_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu_flash/flash_rows.h"
#include "backends/cpu_flash/flash_simd-inl.h"
#include "backends/cpu_flash/flash_types.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// vcvtne2ps2bf16 rounds f32 to bf16 (ties to even); the walk that calls the packers is not
// compiled for avx512bf16, so they stay out of line.
#define ATTNRT_BF16_OPS __attribute__((target("avx512bf16")))
#define ATTNRT_BF16_PACK ATTNRT_BF16_OPS inline HWY_NOINLINE

// 16 lanes of pairs (a[m], b[m]): 16-bit entries 2m and 2m + 1 of the result.
ATTNRT_BF16_OPS HWY_INLINE __m512i PairLanes(__m512 a, __m512 b) {
  alignas(64) static constexpr std::int16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(b, a);  // a's 16 entries, then b's
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), halves);
}

// Qᵀ as pairs[p][m] = (q[m][2p], q[m][2p + 1]) × scale (log2 units), row by row: the fallback
// for rows further apart than an int32 gather index reaches. Padded rows are zero.
ATTNRT_BF16_PACK void PackQueryPairsByRow(const ForwardTask& task, const Item& item,
                                          const RowSet& rows, std::uint32_t* HWY_RESTRICT pairs) {
  const int key_size = task.cache.key_size;
  const __m512 scale = _mm512_set1_ps(task.scale_log2);
  HWY_ALIGN std::uint32_t row_pairs[16];
  for (int m = 0; m < rows.padded; ++m) {
    const float* q = m < rows.count ? query_row(task, item, m) : nullptr;
    for (int i = 0; i < key_size; i += 32) {
      __m512i bf = _mm512_setzero_si512();
      if (q != nullptr) {
        const __m512 lo = _mm512_mul_ps(_mm512_loadu_ps(q + i), scale);
        const __m512 hi = _mm512_mul_ps(_mm512_loadu_ps(q + i + 16), scale);
        bf = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // head dims i .. i + 31 in order
      }
      _mm512_store_si512(row_pairs, bf);
      for (int p = 0; p < 16; ++p) pairs[(i / 2 + p) * rows.padded + m] = row_pairs[p];
    }
  }
}

// The same 16 rows at a time: pair p of 8 rows is one 64-bit gather, and two of them round to
// one vector of 16 pairs in lane order.
ATTNRT_BF16_PACK void PackQueryPairs(const ForwardTask& task, const Item& item, const RowSet& rows,
                                     std::uint32_t* HWY_RESTRICT pairs) {
  const float* row0 = query_row(task, item, 0);
  HWY_ALIGN std::int32_t offsets[kMaxRows];
  for (int m = 0; m < rows.padded; ++m) {
    const std::ptrdiff_t offset = m < rows.count ? query_row(task, item, m) - row0 : 0;
    if (offset != static_cast<std::int32_t>(offset)) {
      return PackQueryPairsByRow(task, item, rows, pairs);
    }
    offsets[m] = static_cast<std::int32_t>(offset);
  }
  const __m512 scale = _mm512_set1_ps(task.scale_log2);
  for (int m = 0; m < rows.padded; m += 16) {
    const __m256i first = _mm256_load_si256(reinterpret_cast<const __m256i*>(offsets + m));
    const __m256i second = _mm256_load_si256(reinterpret_cast<const __m256i*>(offsets + m + 8));
    const int real = std::min(16, rows.count - m);
    const auto keep = static_cast<__mmask16>((1u << real) - 1u);
    for (int p = 0; p < task.cache.key_size / 2; ++p) {
      const float* base = row0 + 2 * p;
      const __m512 lo = _mm512_castsi512_ps(_mm512_i32gather_epi64(first, base, 4));
      const __m512 hi = _mm512_castsi512_ps(_mm512_i32gather_epi64(second, base, 4));
      const auto bf =
          (__m512i)_mm512_cvtne2ps_pbh(_mm512_mul_ps(hi, scale), _mm512_mul_ps(lo, scale));
      _mm512_store_si512(pairs + p * rows.padded + m, _mm512_maskz_mov_epi32(keep, bf));
    }
  }
}

// r[0..15] (16 rows of 16 u32) transposed, in 64 shuffles: out row c goes to dst + c·stride.
HWY_INLINE void Transpose16x16(const __m512i (&r)[16], std::uint32_t* HWY_RESTRICT dst,
                               std::int64_t stride) {
  __m512i t[16];
  __m512i u[16];
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
  }
  // u[4k + q], 128-bit lane L: column 4L + q of rows 4k .. 4k + 3.
  for (int k = 0; k < 16; k += 4) {
    u[k] = _mm512_unpacklo_epi64(t[k], t[k + 2]);
    u[k + 1] = _mm512_unpackhi_epi64(t[k], t[k + 2]);
    u[k + 2] = _mm512_unpacklo_epi64(t[k + 1], t[k + 3]);
    u[k + 3] = _mm512_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xEE);
    const __m512i y0 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x44);
    const __m512i y1 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xEE);
    _mm512_store_si512(dst + q * stride, _mm512_shuffle_i32x4(x0, y0, 0x88));
    _mm512_store_si512(dst + (4 + q) * stride, _mm512_shuffle_i32x4(x0, y0, 0xDD));
    _mm512_store_si512(dst + (8 + q) * stride, _mm512_shuffle_i32x4(x1, y1, 0x88));
    _mm512_store_si512(dst + (12 + q) * stride, _mm512_shuffle_i32x4(x1, y1, 0xDD));
  }
}

// Keys [first, first + count) of one KV head: K rows as cached (key_size bf16 each, adjacent
// dims are the pairs), and V transposed to pairs[i][j] = (v[2j][i], v[2j + 1][i]) over the
// tile's kKeyTile / 2 pairs (zero past count): two key rows interleave into a row of pairs,
// 16 such rows transpose at once.
HWY_INLINE void PackKeysAndValuePairs(const CacheView& cache, const Request& request, int kv_head,
                                      int first, int count, std::uint32_t* HWY_RESTRICT keys,
                                      std::uint32_t* HWY_RESTRICT value_pairs) {
  alignas(64) static constexpr std::int16_t kLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                        37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                        11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr std::int16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                         53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                         27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  constexpr int kPairs = kKeyTile / 2;
  const std::uint16_t* content[kKeyTile];
  for (int n = 0; n < count; ++n) {
    content[n] =
        reinterpret_cast<const std::uint16_t*>(cache.token(request.block_row, first + n, kv_head));
    const std::uint16_t* key = content[n] + cache.key_offset;
    std::uint16_t* packed = reinterpret_cast<std::uint16_t*>(keys) + n * cache.key_size;
    for (int i = 0; i < cache.key_size; i += 32) {
      _mm512_store_si512(packed + i, _mm512_loadu_si512(key + i));
    }
  }
  const __m512i low = _mm512_load_si512(kLow);
  const __m512i high = _mm512_load_si512(kHigh);
  for (int block = 0; block < kPairs; block += 16) {
    for (int c = 0; c < cache.value_size; c += 32) {
      __m512i lo[16];
      __m512i hi[16];
      for (int jj = 0; jj < 16; ++jj) {
        const int even = 2 * (block + jj);
        const __m512i zero = _mm512_setzero_si512();
        const __m512i a =
            even < count ? _mm512_loadu_si512(content[even] + cache.value_offset + c) : zero;
        const __m512i b = even + 1 < count
                              ? _mm512_loadu_si512(content[even + 1] + cache.value_offset + c)
                              : zero;
        lo[jj] = _mm512_permutex2var_epi16(a, low, b);   // pairs of values c .. c + 15
        hi[jj] = _mm512_permutex2var_epi16(a, high, b);  // c + 16 .. c + 31
      }
      Transpose16x16(lo, value_pairs + c * kPairs + block, kPairs);
      Transpose16x16(hi, value_pairs + (c + 16) * kPairs + block, kPairs);
    }
  }
}

// The softmax weights Pᵀ[count][padded] (f32) as key pairs, in place: pair row j overwrites
// score row j, which pair j / 2 < j has already read (row 0: read before written). Pair rows
// up to a multiple of 16 (a tile's depth) are zero-filled; returns their count.
ATTNRT_BF16_PACK int PackWeightPairs(int count, int padded, float* scores) {
  auto* pairs = reinterpret_cast<std::uint32_t*>(scores);
  const int used = (count + 1) / 2;
  for (int j = 0; j < used; ++j) {
    const float* even = scores + 2 * j * padded;
    const float* odd = 2 * j + 1 < count ? even + padded : nullptr;
    for (int m = 0; m < padded; m += 16) {
      const __m512 b = odd != nullptr ? _mm512_load_ps(odd + m) : _mm512_setzero_ps();
      _mm512_store_si512(pairs + j * padded + m, PairLanes(_mm512_load_ps(even + m), b));
    }
  }
  const int total = (used + 15) / 16 * 16;
  std::memset(pairs + used * padded, 0, sizeof(std::uint32_t) * (total - used) * padded);
  return total;
}

// Oᵀ[value_size][padded]: column m times rows.alpha[m], skipping 16 columns whose α are all 1
// (the max did not rise), as most are once a causal prefill is past its first tiles.
HWY_INLINE void RescaleColumns(const RowSet& rows, int value_size, float* HWY_RESTRICT ot) {
  const __m512 one = _mm512_set1_ps(1.f);
  for (int m = 0; m < rows.padded; m += 16) {
    const __m512 alpha = _mm512_load_ps(rows.alpha + m);
    if (_mm512_cmpneq_ps_mask(alpha, one) == 0) continue;
    for (int i = 0; i < value_size; ++i) {
      float* column = ot + static_cast<std::int64_t>(i) * rows.padded + m;
      _mm512_store_ps(column, _mm512_mul_ps(_mm512_load_ps(column), alpha));
    }
  }
}

#undef ATTNRT_BF16_PACK
#undef ATTNRT_BF16_OPS
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_PAIRS_INL_H_
