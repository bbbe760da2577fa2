// The two transposes of a GEMM item on AVX-512: the query rows into Qᵀ (rows along lanes) and Oᵀ
// back into output rows, by 16 × 16 blocks transposed in registers. The portable walk gathers a
// vector at a time instead; on Emerald Rapids those gathers (16 cache lines each) took about
// half of a 512-token prefill's time outside the tile products (docs/cpu-flash.md §6).

#if defined(ATTNRT_CPU_FLASH_AVX512_GEMM_TRANSPOSES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_GEMM_TRANSPOSES_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_GEMM_TRANSPOSES_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_GEMM_TRANSPOSES_INL_H_
#endif

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>

#include "backends/cpu_flash/flash_rows.h"
#include "backends/cpu_flash/flash_simd-inl.h"
#include "backends/cpu_flash/flash_softmax-inl.h"
#include "backends/cpu_flash/flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
inline constexpr int kTransposeBlock = 16;

// v[r] (row r of a 16 × 16 block) becomes column r: 4 × 4 transposes inside each 128-bit block
// (two rounds of unpacks), then two rounds of block shuffles. 64 shuffles for 16 vectors.
HWY_INLINE void Transpose16x16(__m512 (&v)[kTransposeBlock]) {
  // Per group g of 4 rows: w[g][k], block b = column 4b + k of rows 4g..4g+3.
  __m512 w[4][4];
  for (int g = 0; g < 4; ++g) {
    const __m512* r = v + 4 * g;
    const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]);
    const __m512 t1 = _mm512_unpackhi_ps(r[0], r[1]);
    const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]);
    const __m512 t3 = _mm512_unpackhi_ps(r[2], r[3]);
    const auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
    w[g][0] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t0), pd(t2)));
    w[g][1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t0), pd(t2)));
    w[g][2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t1), pd(t3)));
    w[g][3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t1), pd(t3)));
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 low01 = _mm512_shuffle_f32x4(w[0][k], w[1][k], 0x44);   // blocks 0, 1 of each
    const __m512 high01 = _mm512_shuffle_f32x4(w[0][k], w[1][k], 0xEE);  // blocks 2, 3
    const __m512 low23 = _mm512_shuffle_f32x4(w[2][k], w[3][k], 0x44);
    const __m512 high23 = _mm512_shuffle_f32x4(w[2][k], w[3][k], 0xEE);
    v[k] = _mm512_shuffle_f32x4(low01, low23, 0x88);      // column k
    v[4 + k] = _mm512_shuffle_f32x4(low01, low23, 0xDD);  // column 4 + k
    v[8 + k] = _mm512_shuffle_f32x4(high01, high23, 0x88);
    v[12 + k] = _mm512_shuffle_f32x4(high01, high23, 0xDD);
  }
}

// Qᵀ[key_size][padded rows] scaled into log2 units (padded rows zero), as PackQueryTransposed;
// key_size a multiple of 16.
HWY_INLINE void PackQueryByBlocks(const ForwardTask& task, const Item& item, const RowSet& rows,
                                  float* HWY_RESTRICT qt) {
  const int key_size = task.cache.key_size;
  const __m512 scale = _mm512_set1_ps(task.scale_log2);
  for (int m0 = 0; m0 < rows.padded; m0 += kTransposeBlock) {
    const float* q[kTransposeBlock];
    for (int r = 0; r < kTransposeBlock; ++r) {
      q[r] = m0 + r < rows.count ? query_row(task, item, m0 + r) : nullptr;
    }
    for (int i0 = 0; i0 < key_size; i0 += kTransposeBlock) {
      __m512 v[kTransposeBlock];
      for (int r = 0; r < kTransposeBlock; ++r) {
        v[r] = q[r] != nullptr ? _mm512_loadu_ps(q[r] + i0) : _mm512_setzero_ps();
      }
      Transpose16x16(v);
      for (int c = 0; c < kTransposeBlock; ++c) {
        _mm512_store_ps(qt + static_cast<std::int64_t>(i0 + c) * rows.padded + m0,
                        _mm512_mul_ps(v[c], scale));
      }
    }
  }
}

// FinishRows for O kept as Oᵀ[value_size][padded rows]; value_size a multiple of 16. Each block
// of 16 rows is transposed into `stage` (16 × value_size floats, in L1), then written a whole row
// at a time: stores spread over 16 output rows at once ran at 0.98x the gathers.
HWY_INLINE void FinishRowsFromColumns(const ForwardTask& task, const Item& item, const RowSet& rows,
                                      const float* HWY_RESTRICT ot, float* HWY_RESTRICT stage) {
  const int value_size = task.cache.value_size;
  for (int m0 = 0; m0 < rows.count; m0 += kTransposeBlock) {
    for (int j0 = 0; j0 < value_size; j0 += kTransposeBlock) {
      __m512 v[kTransposeBlock];
      for (int c = 0; c < kTransposeBlock; ++c) {
        v[c] = _mm512_load_ps(ot + static_cast<std::int64_t>(j0 + c) * rows.padded + m0);
      }
      Transpose16x16(v);
      for (int r = 0; r < kTransposeBlock; ++r) _mm512_store_ps(stage + r * value_size + j0, v[r]);
    }
    const int block_rows = std::min(kTransposeBlock, rows.count - m0);
    for (int r = 0; r < block_rows; ++r) {
      const RowTarget target = FinishRowTarget(task, item, rows, m0 + r);
      ScaleRow(stage + r * value_size, value_size, target.scale, target.dst);
    }
  }
}
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_GEMM_TRANSPOSES_INL_H_
