// The products of a bf16 GEMM item on AVX512-BF16 (vdpbf16ps: 16 lanes, each the sum of two bf16
// products added to an f32), on the operand layouts of AMX tiles (bf16_pairs-inl.h): a row of A
// holds bf16 pairs along the depth, a row of B holds one pair for each of 16 · n columns. Each
// pair of A is broadcast against four vectors of B, so that a product costs no shuffle. On CPUs
// whose vdpbf16ps issues as fast as an FMA (Zen 4) this doubles the MACs per instruction; on
// Sapphire Rapids it runs at half the FMA's rate, and AMX tiles serve instead.
// x86 AVX-512 targets only; empty elsewhere.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_GEMM_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_GEMM_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_GEMM_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu_flash/flash_targets.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// Highway's AVX3 and AVX3_DL targets do not enable AVX512-BF16, hence the attribute.
#define ATTNRT_BF16_GEMM __attribute__((target("avx512bf16")))

// C rows r .. r + 3, vectors 0 .. NV - 1 (+)= Σ_p A[r + i][p] · B[p][vector]: 4 · NV
// accumulators, NV loads and 4 broadcasts per pair. Strides in bytes.
template <int NV, bool kAccumulate>
ATTNRT_BF16_GEMM HWY_INLINE void DotPairRowsOfFour(const std::byte* a, std::int64_t lda,
                                                   const std::byte* b, std::int64_t ldb, int pairs,
                                                   std::byte* c, std::int64_t ldc) {
  __m512 acc[4][NV];
  for (int i = 0; i < 4; ++i) {
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = kAccumulate ? _mm512_loadu_ps(c + i * ldc + v * 64) : _mm512_setzero_ps();
    }
  }
  for (int p = 0; p < pairs; ++p) {
    __m512bh column[NV];
    for (int v = 0; v < NV; ++v) {
      column[v] = (__m512bh)_mm512_loadu_si512(b + p * ldb + v * 64);
    }
    for (int i = 0; i < 4; ++i) {
      std::int32_t pair;
      std::memcpy(&pair, a + i * lda + p * 4, sizeof(pair));
      const auto broadcast = (__m512bh)_mm512_set1_epi32(pair);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], broadcast, column[v]);
    }
  }
  for (int i = 0; i < 4; ++i) {
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + i * ldc + v * 64, acc[i][v]);
  }
}

// The whole product, in TileProduct's terms (amx/bf16_tiles-inl.h): m_blocks × n_blocks blocks
// of 16 × 16 f32, `steps` depths of 32 bf16. Four vectors of B at a time, past every row of A,
// so that B's block (at most 64 pairs × 256 bytes) stays in L1.
template <bool kAccumulate>
ATTNRT_BF16_GEMM inline HWY_NOINLINE void DotPairProduct(int m_blocks, int n_blocks, int steps,
                                                         const void* a, std::int64_t lda,
                                                         const void* b, std::int64_t ldb, float* c,
                                                         std::int64_t ldc) {
  const auto* a_bytes = static_cast<const std::byte*>(a);
  const auto* b_bytes = static_cast<const std::byte*>(b);
  auto* c_bytes = reinterpret_cast<std::byte*>(c);
  const int rows = m_blocks * 16;
  const int pairs = steps * 16;
  for (int v = 0; v < n_blocks; v += 4) {
    const std::byte* bv = b_bytes + v * 64;
    for (int r = 0; r < rows; r += 4) {
      const std::byte* ar = a_bytes + r * lda;
      std::byte* cr = c_bytes + r * ldc + v * 64;
      switch (std::min(4, n_blocks - v)) {
        case 4:
          DotPairRowsOfFour<4, kAccumulate>(ar, lda, bv, ldb, pairs, cr, ldc);
          break;
        case 3:
          DotPairRowsOfFour<3, kAccumulate>(ar, lda, bv, ldb, pairs, cr, ldc);
          break;
        case 2:
          DotPairRowsOfFour<2, kAccumulate>(ar, lda, bv, ldb, pairs, cr, ldc);
          break;
        default:
          DotPairRowsOfFour<1, kAccumulate>(ar, lda, bv, ldb, pairs, cr, ldc);
          break;
      }
    }
  }
}

// Bf16PairOperands' products on vdpbf16ps: no state to set up.
struct DotPairProducts {
  static void Begin() {}
  static void End() {}
  template <bool kAccumulate>
  static void Multiply(int m_blocks, int n_blocks, int steps, const void* a, std::int64_t lda,
                       const void* b, std::int64_t ldb, float* c, std::int64_t ldc) {
    DotPairProduct<kAccumulate>(m_blocks, n_blocks, steps, a, lda, b, ldb, c, ldc);
  }
};

#undef ATTNRT_BF16_GEMM
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_PAIR_GEMM_INL_H_
