// Which code serves an item, per Highway target: the one place that decides, from the item's
// shape, the cache dtype and the ISA. GEMV items (decode-like, at most kGemvMaxRows rows per KV
// head) first; docs/cpu-flash.md shows the same tables with the plan's choice of GEMM vs GEMV.
//
//   R = rows per KV head     cache, ISA, condition                  walk, products
//   1                        bf16 dot (below)                       one-row stream, bf16 dot
//   4, rows share the keys   bf16 dot                               four-row stream, bf16 dot
//   >= 3                     bf16 dot                               chunks by four rows, bf16 dot
//   2                        bf16 dot                               chunks, bf16 dot
//   1                        other, >= 4 lanes                      one-row stream, f32 FMA
//   4, rows share the keys   other, AVX-512, K % 16, V % 32 == 0    four-row stream, f32 FMA
//   >= 3                     other, AVX-512, K % 16 == 0            chunks by four rows, f32 FMA
//   otherwise                any, every target                      chunks, f32 FMA
//
// "bf16 dot": a bf16 cache whose K and V widths are multiples of 32, on an AVX-512 target of a
// CPU with avx512bf16, when ForwardTask::bf16_dot allows (CpuFlashOptions). The streams read each
// token record once, front to back, and keep the softmax state in registers; the chunk walk scores
// a chunk of keys, then sums its values from L2.
//
// A GEMM item (more rows) has one walk, GemmWalk, whose operands ChooseGemmProducts picks:
//   bf16, K % 32 and V % 32 == 0, AVX-512 target, and ForwardTask::prefill_products says
//     amx_tiles (the CPU and OS grant AMX)                       bf16 pairs on AMX tiles
//     bf16_dot (the CPU has AVX512-BF16, no AMX)                 bf16 pairs on vdpbf16ps
//   otherwise                                                    f32 FMA on converted tiles

#if defined(ATTNRT_CPU_FLASH_DISPATCH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_DISPATCH_INL_H_
#undef ATTNRT_CPU_FLASH_DISPATCH_INL_H_
#else
#define ATTNRT_CPU_FLASH_DISPATCH_INL_H_
#endif

#include "flash_gemv_scores-inl.h"
#include "flash_gemv_stream-inl.h"
#include "flash_rows.h"
#include "flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// The hand-written AVX-512 code (avx512/: rotated rows, four-row streams, AVX512-BF16) is compiled
// for this target.
inline constexpr bool kAvx512Paths = ATTNRT_AVX512_TARGET;
inline constexpr bool kHasBf16Dot = kAvx512Paths;

enum class GemvWalk : std::uint8_t {
  chunks,            // ForEachChunk with the R rows' scores per key group
  chunks_by_four,    // ForEachChunk with rows interleaved by four (no horizontal sum per key)
  stream_one_row,    // StreamKeys
  stream_four_rows,  // StreamFourRows
};

// The bf16 dot-product code serves this call: a bf16 cache, widths multiples of 32.
HWY_INLINE bool UsesBf16Dot(const ForwardTask& task) {
  return kHasBf16Dot && task.bf16_dot && task.cache.dtype == DType::bf16 &&
         task.cache.key_size % 32 == 0 && task.cache.value_size % 32 == 0;
}

// The products of this call's GEMM items: as ForwardTask::prefill_products asks (the backend
// asked the CPU) for a bf16 cache with widths multiples of 32 on an AVX-512 target; f32 FMAs
// otherwise. Independent of `bf16_dot`: the decode and prefill paths are chosen apart.
HWY_INLINE PrefillProducts ChooseGemmProducts(const ForwardTask& task) {
  const bool pairs = kAvx512Paths && task.cache.dtype == DType::bf16 &&
                     task.cache.key_size % 32 == 0 && task.cache.value_size % 32 == 0;
  return pairs ? task.prefill_products : PrefillProducts::f32;
}

// Whether ChooseGemvWalk<R> can pick `walk` on this target, `bf16_dot` as there: the GEMV driver
// (GemvItemWalk) compiles no other walk for an R and its products.
template <int R>
constexpr bool MayChooseGemvWalk(GemvWalk walk, bool bf16_dot) {
  const bool one_row_stream = R == 1 && (bf16_dot || kLanes >= kStreamKeys);
  const bool by_four = bf16_dot || kAvx512Paths;
  switch (walk) {
    case GemvWalk::stream_one_row:
      return one_row_stream;
    case GemvWalk::stream_four_rows:
      return R == 4 && by_four;
    case GemvWalk::chunks_by_four:
      return R >= 3 && by_four;
    case GemvWalk::chunks:
      return !one_row_stream && !(bf16_dot && R >= 3);
  }
  return false;
}

// The walk of an item with R rows per KV head; `bf16_dot` as UsesBf16Dot says.
template <int R>
HWY_INLINE GemvWalk ChooseGemvWalk(const CacheView& cache, const RowSet& rows, bool bf16_dot) {
  if (R == 1 && (bf16_dot || kLanes >= kStreamKeys)) return GemvWalk::stream_one_row;
  const bool by_four = bf16_dot || (kAvx512Paths && cache.key_size % 16 == 0);
  const bool four_row_values = bf16_dot || cache.value_size % (2 * kLanes) == 0;
  if (R == 4 && by_four && four_row_values && rows_share_keys(rows)) {
    return GemvWalk::stream_four_rows;
  }
  return R >= 3 && by_four ? GemvWalk::chunks_by_four : GemvWalk::chunks;
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_DISPATCH_INL_H_
