// The f32-product walks of a GEMV item with R >= 3 rows per KV head on AVX-512 (ChooseGemvWalk's
// stream_four_rows and chunks_by_four): the query rows again as rotations, then either the
// four-row stream or the chunk walk with four rows scored per instruction.

#if defined(ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROWS_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROWS_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROWS_INL_H_
#endif

#include "backends/cpu_flash/avx512/f32_four_row_scores-inl.h"
#include "backends/cpu_flash/avx512/four_row_stream-inl.h"
#include "backends/cpu_flash/flash_dispatch-inl.h"
#include "backends/cpu_flash/flash_gemv_chunks-inl.h"
#include "backends/cpu_flash/flash_rows.h"
#include "backends/cpu_flash/flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// `queries` holds the item's rows scaled to log2 units, row-major, with room for their
// rotations after them; `values` is the chunk walk's softmax and PV step (GemvItemRows).
template <typename T, int R, class Values>
HWY_INLINE void GemvRowsByFourF32(const ForwardTask& task, const Item& item, const RowSet& rows,
                                  GemvWalk walk, float* queries, float* HWY_RESTRICT o,
                                  float* scores, const Values& values) {
  static_assert(R >= 3);
  const CacheView& cache = task.cache;
  // Each head's rows again, as rotations (after the row-major copies).
  constexpr int kRotatedRows = 4 * ((R + 3) / 4);
  float* rotations = queries + rows.count * cache.key_size;
  for (int h = 0; h < item.num_kv_heads; ++h) {
    RotateRowsByFourF32<R>(queries + h * R * cache.key_size, cache.key_size,
                           rotations + h * kRotatedRows * cache.key_size);
  }
  if (walk == GemvWalk::stream_four_rows) {
    StreamFourRows(
        task, item, rows, o,
        [&](int h, const std::byte* const(&tokens)[kStreamKeys]) {
          const T* keys[kStreamKeys];
          for (int k = 0; k < kStreamKeys; ++k) {
            keys[k] = reinterpret_cast<const T*>(tokens[k]) + cache.key_offset;
          }
          return VF{
              FourKeysFourRowsF32<T>(rotations + h * 4 * cache.key_size, cache.key_size, keys)};
        },
        AddValuesFourRowsF32<T>{cache.value_offset, cache.value_size});
    return FinishGemvItem(task, item, rows, o);
  }
  ForEachChunk<4>(
      task, item, rows, scores,
      [&](int h, int n, int count, const std::byte* const* tokens, float* buffer) {
        ChunkScoresByFourF32<T, R>(rotations + h * kRotatedRows * cache.key_size, cache.key_size,
                                   tokens, cache.key_offset, count,
                                   buffer + h * kScoreRows<R> * kScoreStride + n);
      },
      values);
  FinishGemvItem(task, item, rows, o);
}
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_F32_FOUR_ROWS_INL_H_
