// The AVX-512 instructions the portable CPU_FLASH building blocks use where Highway has no single
// operation for them: vscalefps for exp2, and the in-block folds that sum four vectors' lanes.
// Like every file of this folder (the AVX-512-only code of CPU_FLASH), it is included for every
// target, so that Highway's per-target include guards stay in step, and compiles to nothing
// unless ATTNRT_AVX512_TARGET (flash_targets.h).

#if defined(ATTNRT_CPU_FLASH_AVX512_VECTOR_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_VECTOR_OPS_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_VECTOR_OPS_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_VECTOR_OPS_INL_H_
#endif

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

#include "backends/cpu_flash/flash_targets.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
namespace hn = hwy::HWY_NAMESPACE;

// p · 2^n lane by lane (n integral), in one instruction instead of building exponent bits.
HWY_INLINE hn::Vec<hn::ScalableTag<float>> ScaleByPowerOfTwo(hn::Vec<hn::ScalableTag<float>> p,
                                                             hn::Vec<hn::ScalableTag<float>> n) {
  return hn::Vec<hn::ScalableTag<float>>{_mm512_scalef_ps(p.raw, n.raw)};
}

// Block r of every input k_b holds 4 partial sums of row r; lane b of block r of the result is
// row r · key b.
HWY_INLINE __m512 FourByFour(__m512 k0, __m512 k1, __m512 k2, __m512 k3) {
  const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(k0, k1), _mm512_unpackhi_ps(k0, k1));
  const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(k2, k3), _mm512_unpackhi_ps(k2, k3));
  const __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(t01), _mm512_castps_pd(t23));
  const __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(t01), _mm512_castps_pd(t23));
  return _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));
}

// Every block of 4 lanes of the result holds the sums of the lanes of v0..v3: FourByFour's
// in-block unpacks, then two block swaps.
HWY_INLINE __m512 LaneSumsOfFour(__m512 v0, __m512 v1, __m512 v2, __m512 v3) {
  __m512 sums = FourByFour(v0, v1, v2, v3);
  sums = _mm512_add_ps(sums, _mm512_shuffle_f32x4(sums, sums, 0x4E));
  return _mm512_add_ps(sums, _mm512_shuffle_f32x4(sums, sums, 0xB1));
}
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_VECTOR_OPS_INL_H_
