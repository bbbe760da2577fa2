// The AVX512-BF16 PV of the four-row stream path (four_row_stream-inl.h): a step's V
// lines summed into the 4 rows' O with vdpbf16ps.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_FOUR_ROW_VALUES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_FOUR_ROW_VALUES_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_FOUR_ROW_VALUES_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_FOUR_ROW_VALUES_INL_H_
#endif

#include <cstdint>

#include "backends/cpu_flash/avx512/bf16_scores-inl.h"
#include "backends/cpu_flash/avx512/four_row_stream-inl.h"
#include "backends/cpu_flash/flash_simd-inl.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// o_r[...] += Σ_g Σ_b p_g[r][b] · v_gb[...] for the 4 rows and kRowStreamGroups groups of 4
// keys, in the pair-interleaved order of AddValuesBf16 (UnpermuteRows undoes it): keys (0, 1)
// and (2, 3) of a group as bf16 pairs, weights in lane b of block r of p_g.
struct AddValuesFourRowsBf16 {
  int value_offset;
  int value_size;  // a multiple of 32
  // Not forced inline: StreamFourRows is compiled without AVX512-BF16; GemvItemBf16's flatten
  // inlines it there.
  ATTNRT_BF16_DOT void operator()(const VF (&p)[kRowStreamGroups], const StepTokens& tokens,
                                  float* HWY_RESTRICT o) const;
};

ATTNRT_BF16_DOT inline void AddValuesFourRowsBf16::operator()(const VF (&p)[kRowStreamGroups],
                                                              const StepTokens& tokens,
                                                              float* HWY_RESTRICT o) const {
  const std::uint16_t* v[kRowStreamGroups][kStreamKeys];
  for (int g = 0; g < kRowStreamGroups; ++g) {
    for (int k = 0; k < kStreamKeys; ++k) {
      v[g][k] = reinterpret_cast<const std::uint16_t*>(tokens[g][k]) + value_offset;
    }
  }
  alignas(64) std::uint32_t pairs[kRowStreamGroups][8];
  HWY_UNROLL(4)
  for (int g = 0; g < kRowStreamGroups; ++g) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(pairs[g]), (__m256i)_mm512_cvtneps_pbh(p[g].raw));
  }
  for (int j = 0; j < value_size; j += 32) {
    __m512 lo[4];
    __m512 hi[4];
    HWY_UNROLL(4)
    for (int r = 0; r < 4; ++r) {
      lo[r] = _mm512_loadu_ps(o + r * value_size + j);
      hi[r] = _mm512_loadu_ps(o + r * value_size + j + 16);
    }
    HWY_UNROLL(4)
    for (int g = 0; g < kRowStreamGroups; ++g) {
      const __m512i v0 = _mm512_loadu_si512(v[g][0] + j);
      const __m512i v1 = _mm512_loadu_si512(v[g][1] + j);
      const __m512i v2 = _mm512_loadu_si512(v[g][2] + j);
      const __m512i v3 = _mm512_loadu_si512(v[g][3] + j);
      const __m512bh lo01 = (__m512bh)_mm512_unpacklo_epi16(v0, v1);
      const __m512bh hi01 = (__m512bh)_mm512_unpackhi_epi16(v0, v1);
      const __m512bh lo23 = (__m512bh)_mm512_unpacklo_epi16(v2, v3);
      const __m512bh hi23 = (__m512bh)_mm512_unpackhi_epi16(v2, v3);
      HWY_UNROLL(4)
      for (int r = 0; r < 4; ++r) {
        const __m512bh first = (__m512bh)_mm512_set1_epi32(static_cast<int>(pairs[g][2 * r]));
        const __m512bh second = (__m512bh)_mm512_set1_epi32(static_cast<int>(pairs[g][2 * r + 1]));
        lo[r] = _mm512_dpbf16_ps(lo[r], first, lo01);
        hi[r] = _mm512_dpbf16_ps(hi[r], first, hi01);
        lo[r] = _mm512_dpbf16_ps(lo[r], second, lo23);
        hi[r] = _mm512_dpbf16_ps(hi[r], second, hi23);
      }
    }
    HWY_UNROLL(4)
    for (int r = 0; r < 4; ++r) {
      _mm512_storeu_ps(o + r * value_size + j, lo[r]);
      _mm512_storeu_ps(o + r * value_size + j + 16, hi[r]);
    }
  }
}
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_FOUR_ROW_VALUES_INL_H_
