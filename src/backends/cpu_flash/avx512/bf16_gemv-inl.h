// The GEMV path for bf16 caches on CPUs with AVX512-BF16 (vdpbf16ps: 32 bf16 products summed
// into 16 f32 lanes per instruction, twice the MACs of an f32 FMA; its scores are in
// bf16_scores-inl.h). K and V are used as stored; the query rows and the softmax
// weights are rounded to bf16 (the sums stay f32), as GPU flash kernels do with bf16 inputs.
// Needs key and value sizes that are multiples of 32.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
#endif

#include "backends/cpu_flash/avx512/bf16_four_row_values-inl.h"
#include "backends/cpu_flash/avx512/bf16_scores-inl.h"
#include "backends/cpu_flash/flash_dispatch-inl.h"
#include "backends/cpu_flash/flash_gemv_chunks-inl.h"
#include "backends/cpu_flash/flash_gemv_stream-inl.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// Softmax weights of the chunk as bf16 pairs (key 2t low, key 2t+1 high), kPairs per row; keys
// past the chunk's count have weight 0.
inline constexpr int kPairs = kScoreStride / 2;
ATTNRT_BF16_DOT HWY_INLINE void PackWeightsBf16(const float* probabilities, int rows, int count,
                                                std::uint32_t* HWY_RESTRICT pairs) {
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < count; n += 16) {
      const __m256bh p = _mm512_cvtneps_pbh(_mm512_loadu_ps(probabilities + m * kScoreStride + n));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pairs + m * kPairs + n / 2), (__m256i)p);
    }
  }
}

// out[m][j0, j0 + 32·JC) in pair-interleaved order (see UnpermuteRows) += Σ_t p_pair · v_pair.
template <int R, int JC>
ATTNRT_BF16_DOT HWY_INLINE void ValuePassBf16(const std::uint32_t* HWY_RESTRICT pairs,
                                              const float* alpha, int count,
                                              const std::byte* const* tokens, int value_offset,
                                              int value_size, int j0, float* HWY_RESTRICT out) {
  __m512 acc[R][2 * JC];
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    const __m512 a = _mm512_set1_ps(alpha[m]);
    HWY_UNROLL(8)
    for (int v = 0; v < 2 * JC; ++v) {
      acc[m][v] = _mm512_mul_ps(_mm512_loadu_ps(out + m * value_size + j0 + 16 * v), a);
    }
  }
  for (int t = 0; 2 * t < count; ++t) {
    const auto* first = reinterpret_cast<const std::uint16_t*>(tokens[2 * t]) + value_offset;
    const auto* second =
        reinterpret_cast<const std::uint16_t*>(tokens[std::min(2 * t + 1, count - 1)]) +
        value_offset;
    HWY_UNROLL(4)
    for (int c = 0; c < JC; ++c) {
      const __m512i a = _mm512_loadu_si512(first + j0 + 32 * c);
      const __m512i b = _mm512_loadu_si512(second + j0 + 32 * c);
      const __m512bh lo = (__m512bh)_mm512_unpacklo_epi16(a, b);
      const __m512bh hi = (__m512bh)_mm512_unpackhi_epi16(a, b);
      HWY_UNROLL(8)
      for (int m = 0; m < R; ++m) {
        const __m512bh p = (__m512bh)_mm512_set1_epi32(static_cast<int>(pairs[m * kPairs + t]));
        acc[m][2 * c] = _mm512_dpbf16_ps(acc[m][2 * c], p, lo);
        acc[m][2 * c + 1] = _mm512_dpbf16_ps(acc[m][2 * c + 1], p, hi);
      }
    }
  }
  HWY_UNROLL(8)
  for (int m = 0; m < R; ++m) {
    HWY_UNROLL(8)
    for (int v = 0; v < 2 * JC; ++v)
      _mm512_storeu_ps(out + m * value_size + j0 + 16 * v, acc[m][v]);
  }
}

// Within each 32-entry chunk, unpacklo/hi leave entry 8k + 4h + r at slot 16h + 4k + r; two
// two-source permutes put every chunk back in order.
HWY_INLINE void UnpermuteRows(float* rows, int count, int value_size) {
  alignas(64) std::int32_t index[32];
  for (int j = 0; j < 32; ++j) index[j] = 16 * ((j / 4) % 2) + 4 * (j / 8) + j % 4;
  const __m512i low = _mm512_load_si512(index);
  const __m512i high = _mm512_load_si512(index + 16);
  for (int m = 0; m < count; ++m) {
    for (int j0 = 0; j0 < value_size; j0 += 32) {
      float* row = rows + m * value_size + j0;
      const __m512 a = _mm512_loadu_ps(row);
      const __m512 b = _mm512_loadu_ps(row + 16);
      _mm512_storeu_ps(row, _mm512_permutex2var_ps(a, low, b));
      _mm512_storeu_ps(row + 16, _mm512_permutex2var_ps(a, high, b));
    }
  }
}

// The AVX512-BF16 PV of a stream step, for StreamKeys: keys (0, 1) and (2, 3) as bf16 pairs
// against their V entries interleaved by unpacklo/hi, half the instructions of f32 FMAs; O
// accumulates in the pair-interleaved order that UnpermuteRows undoes after the walk. A short
// step repeats its last key with weight 0. Needs a value size that is a multiple of 32.
struct AddValuesBf16 {
  int value_size;
  // Not forced inline: StreamKeys is compiled without AVX512-BF16, so this stays a call.
  ATTNRT_BF16_DOT void operator()(const float* HWY_RESTRICT p, int,
                                  const hwy::bfloat16_t* const (&values)[kStreamKeys],
                                  float* HWY_RESTRICT o) const {
    static_assert(kStreamKeys == 4);
    alignas(16) std::uint32_t pairs[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs), (__m128i)_mm_cvtneps_pbh(_mm_load_ps(p)));
    const __m512bh first = (__m512bh)_mm512_set1_epi32(static_cast<int>(pairs[0]));
    const __m512bh second = (__m512bh)_mm512_set1_epi32(static_cast<int>(pairs[1]));
    const std::uint16_t* v[kStreamKeys];
    for (int k = 0; k < kStreamKeys; ++k) v[k] = reinterpret_cast<const std::uint16_t*>(values[k]);
    for (int j = 0; j < value_size; j += 32) {
      const __m512i v0 = _mm512_loadu_si512(v[0] + j);
      const __m512i v1 = _mm512_loadu_si512(v[1] + j);
      const __m512i v2 = _mm512_loadu_si512(v[2] + j);
      const __m512i v3 = _mm512_loadu_si512(v[3] + j);
      __m512 lo = _mm512_loadu_ps(o + j);
      __m512 hi = _mm512_loadu_ps(o + j + 16);
      lo = _mm512_dpbf16_ps(lo, first, (__m512bh)_mm512_unpacklo_epi16(v0, v1));
      hi = _mm512_dpbf16_ps(hi, first, (__m512bh)_mm512_unpackhi_epi16(v0, v1));
      lo = _mm512_dpbf16_ps(lo, second, (__m512bh)_mm512_unpacklo_epi16(v2, v3));
      hi = _mm512_dpbf16_ps(hi, second, (__m512bh)_mm512_unpackhi_epi16(v2, v3));
      _mm512_storeu_ps(o + j, lo);
      _mm512_storeu_ps(o + j + 16, hi);
    }
  }
};

// Flattened: the stream paths (compiled for the AVX-512 targets alone) call back into lambdas and
// functors of this AVX512-BF16 function, which GCC will not inline into them by itself. A call
// per 4-key score spills every live vector register around it (docs/cpu-flash.md §6).
// A static build with AVX512-BF16 for the whole file (the sanitizer build, see
// cmake/kernel_sources.cmake) inlines the callbacks without it; there, flatten would only
// multiply the instrumented code (the bf16 kernel compiled twice as long).
#if defined(HWY_COMPILE_ONLY_STATIC) && defined(__AVX512BF16__)
#define ATTNRT_BF16_FLATTEN
#else
#define ATTNRT_BF16_FLATTEN __attribute__((flatten))
#endif
template <int R>
ATTNRT_BF16_DOT ATTNRT_BF16_FLATTEN HWY_NOINLINE void GemvItemBf16(const ForwardTask& task,
                                                                   const Item& item,
                                                                   float* scratch) {
  const CacheView& cache = task.cache;
  const ScratchLayout& layout = task.scratch_layout;
  const RowSet rows = prepare_rows(task, item, 1, scratch);
  auto* queries = reinterpret_cast<std::uint16_t*>(scratch + layout.q);
  float* o = scratch + layout.o;
  float* scores = scratch + layout.s;
  auto* pairs = reinterpret_cast<std::uint32_t*>(scratch + layout.k);
  PackQueriesBf16(task, item, rows.count, queries);
  // R >= 3: each head's rows again, interleaved by four (after the row-major copies).
  std::uint16_t* interleaved = queries + rows.count * cache.key_size;
  constexpr int kInterleavedRows = 4 * ((R + 3) / 4);
  if constexpr (R >= 3) {
    for (int h = 0; h < item.num_kv_heads; ++h) {
      RotateRowsByFour<R>(queries + h * R * cache.key_size, cache.key_size,
                          interleaved + h * kInterleavedRows * cache.key_size);
    }
  }
  std::fill(o, o + rows.count * cache.value_size, 0.f);
  constexpr int kKeysPerBlock = kGemvKeyGroup<R>;
  const GemvWalk walk = ChooseGemvWalk<R>(cache, rows, /*bf16_dot=*/true);
  if constexpr (R == 1) {
    StreamKeys<hwy::bfloat16_t, std::uint16_t>(
        task, item, rows, o,
        [&](int h, const std::uint16_t* const(&keys)[kStreamKeys]) {
          return RowKeySumsBf16<1, kStreamKeys>(queries + h * cache.key_size, cache.key_size, keys);
        },
        AddValuesBf16{cache.value_size});
    UnpermuteRows(o, rows.count, cache.value_size);
    return FinishGemvItem(task, item, rows, o);
  }
  if constexpr (R == 4) {
    if (walk == GemvWalk::stream_four_rows) {
      StreamFourRows(
          task, item, rows, o,
          [&](int h, const std::byte* const(&tokens)[kStreamKeys]) {
            const std::uint16_t* keys[kStreamKeys];
            for (int k = 0; k < kStreamKeys; ++k) {
              keys[k] = reinterpret_cast<const std::uint16_t*>(tokens[k]) + cache.key_offset;
            }
            return VF{FourKeysFourRows(interleaved + h * 4 * cache.key_size, cache.key_size, keys)};
          },
          AddValuesFourRowsBf16{cache.value_offset, cache.value_size});
      UnpermuteRows(o, rows.count, cache.value_size);
      return FinishGemvItem(task, item, rows, o);
    }
  }
  constexpr int kChunks = std::clamp(8 / R, 1, 4);  // 32-wide value chunks per pass
  const auto values = [&](int h, int first, int count, const std::byte* const* tokens,
                          float* buffer) {
    const RowSet head = slice_rows(rows, h * R, R);
    float* head_scores = buffer + h * kScoreRows<R> * kScoreStride;
    float* head_o = o + h * R * cache.value_size;
    ChunkSoftmax<R>(head, first, count, first >= rows.max_begin && first + count <= rows.min_end,
                    head_scores);
    PackWeightsBf16(head_scores, R, count, pairs);
    int j = 0;
    for (; j + 32 * kChunks <= cache.value_size; j += 32 * kChunks) {
      ValuePassBf16<R, kChunks>(pairs, head.alpha, count, tokens, cache.value_offset,
                                cache.value_size, j, head_o);
    }
    for (; j < cache.value_size; j += 32) {
      ValuePassBf16<R, 1>(pairs, head.alpha, count, tokens, cache.value_offset, cache.value_size, j,
                          head_o);
    }
  };
  if constexpr (R >= 3) {
    ForEachChunk<4>(  // GemvWalk::chunks_by_four
        task, item, rows, scores,
        [&](int h, int n, int count, const std::byte* const* tokens, float* buffer) {
          ChunkScoresByFour<R>(interleaved + h * kInterleavedRows * cache.key_size, cache.key_size,
                               tokens, cache.key_offset, count,
                               buffer + h * kScoreRows<R> * kScoreStride + n);
        },
        values);
  } else {
    ForEachChunk<kKeysPerBlock>(
        task, item, rows, scores,
        [&](int h, int n, int count, const std::byte* const* tokens, float* buffer) {
          const std::uint16_t* head_queries = queries + h * R * cache.key_size;
          float* head_scores = buffer + h * kScoreRows<R> * kScoreStride + n;
          int k = 0;
          for (; k + kKeysPerBlock <= count; k += kKeysPerBlock) {
            ScoreKeysBf16<R, kKeysPerBlock>(head_queries, cache.key_size, tokens, cache.key_offset,
                                            k, head_scores);
          }
          for (; k < count; ++k) {
            ScoreKeysBf16<R, 1>(head_queries, cache.key_size, tokens, cache.key_offset, k,
                                head_scores);
          }
        },
        values);
  }
  UnpermuteRows(o, rows.count, cache.value_size);
  FinishGemvItem(task, item, rows, o);
}

#undef ATTNRT_BF16_DOT
#undef ATTNRT_BF16_FLATTEN
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
