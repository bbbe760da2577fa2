// The GEMV products for bf16 caches on CPUs with AVX512-BF16 (vdpbf16ps: 32 bf16 products summed
// into 16 f32 lanes per instruction, twice the MACs of an f32 FMA; its scores are in
// bf16_scores-inl.h): GemvBf16DotProducts, the policy the GEMV driver (GemvItemWalk,
// flash_gemv_walk-inl.h) walks with, and GemvItemBf16, its entry. K and V are used as stored; the
// query rows and the softmax weights are rounded to bf16 (the sums stay f32), as GPU flash kernels
// do with bf16 inputs. Needs key and value sizes that are multiples of 32.

#if defined(ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "backends/cpu_flash/avx512/bf16_four_row_values-inl.h"
#include "backends/cpu_flash/avx512/bf16_scores-inl.h"
#include "backends/cpu_flash/flash_dispatch-inl.h"
#include "backends/cpu_flash/flash_gemv_chunks-inl.h"
#include "backends/cpu_flash/flash_gemv_stream-inl.h"
#include "backends/cpu_flash/flash_gemv_walk-inl.h"

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

// The AVX512-BF16 products of a GEMV item (GemvItemWalk, flash_gemv_walk-inl.h): the query rows
// rounded to bf16, and for R >= 3 (whose walks all score four rows at once) each head's rows again,
// interleaved by four, after the row-major copies; O accumulates in the pair-interleaved order of
// the values' unpacklo/hi, which UnpermuteO undoes. Its functors are lambdas of AVX512-BF16
// functions, or have that target themselves: the walks are compiled without it, and only
// GemvItemBf16's flatten inlines them there.
template <int R>
class GemvBf16DotProducts {
 public:
  static constexpr int kRows = R;
  static constexpr bool kBf16Dot = true;
  static constexpr bool kPermutedO = true;
  using Key = std::uint16_t;
  using Value = hwy::bfloat16_t;

  ATTNRT_BF16_DOT GemvBf16DotProducts(const ForwardTask& task, const Item& item, const RowSet& rows,
                                      GemvWalk, float* scratch)
      : cache_(task.cache),
        queries_(reinterpret_cast<std::uint16_t*>(scratch + task.scratch_layout.q)),
        interleaved_(queries_ + rows.count * cache_.key_size),
        pairs_(reinterpret_cast<std::uint32_t*>(scratch + task.scratch_layout.k)),
        o_(scratch + task.scratch_layout.o) {
    PackQueriesBf16(task, item, rows.count, queries_);
    if constexpr (R >= 3) {
      for (int h = 0; h < item.num_kv_heads; ++h) {
        RotateRowsByFour<R>(queries_ + h * R * cache_.key_size, cache_.key_size,
                            interleaved_ + h * kInterleavedRows * cache_.key_size);
      }
    }
  }

  ATTNRT_BF16_DOT auto StreamScores() const {
    return [this](int h, const std::uint16_t* const(&keys)[kStreamKeys]) {
      return RowKeySumsBf16<1, kStreamKeys>(queries_ + h * cache_.key_size, cache_.key_size, keys);
    };
  }
  AddValuesBf16 StreamValues() const { return {cache_.value_size}; }

  ATTNRT_BF16_DOT auto FourRowStreamScores() const {
    return [this](int h, const std::byte* const(&tokens)[kStreamKeys]) {
      const std::uint16_t* keys[kStreamKeys];
      for (int k = 0; k < kStreamKeys; ++k) {
        keys[k] = reinterpret_cast<const std::uint16_t*>(tokens[k]) + cache_.key_offset;
      }
      return VF{FourKeysFourRows(interleaved_ + h * 4 * cache_.key_size, cache_.key_size, keys)};
    };
  }
  AddValuesFourRowsBf16 FourRowStreamValues() const {
    return {cache_.value_offset, cache_.value_size};
  }

  ATTNRT_BF16_DOT auto ScoresByKeyGroup() const {
    return [this](int h, int count, const std::byte* const* tokens, float* scores) {
      constexpr int kKeysPerBlock = kGemvKeyGroup<R>;
      const std::uint16_t* head_queries = queries_ + h * R * cache_.key_size;
      int k = 0;
      for (; k + kKeysPerBlock <= count; k += kKeysPerBlock) {
        ScoreKeysBf16<R, kKeysPerBlock>(head_queries, cache_.key_size, tokens, cache_.key_offset, k,
                                        scores);
      }
      for (; k < count; ++k) {
        ScoreKeysBf16<R, 1>(head_queries, cache_.key_size, tokens, cache_.key_offset, k, scores);
      }
    };
  }
  ATTNRT_BF16_DOT auto ScoresByFour() const {
    return [this](int h, int count, const std::byte* const* tokens, float* scores) {
      ChunkScoresByFour<R>(interleaved_ + h * kInterleavedRows * cache_.key_size, cache_.key_size,
                           tokens, cache_.key_offset, count, scores);
    };
  }
  // The chunk's softmax weights as bf16 pairs, then kChunks 32-wide value chunks per pass.
  ATTNRT_BF16_DOT auto ChunkValues() const {
    return [this](int h, const float* weights, const float* alpha, int count,
                  const std::byte* const* tokens) {
      constexpr int kChunks = std::clamp(8 / R, 1, 4);
      float* o = o_ + h * R * cache_.value_size;
      PackWeightsBf16(weights, R, count, pairs_);
      int j = 0;
      for (; j + 32 * kChunks <= cache_.value_size; j += 32 * kChunks) {
        ValuePassBf16<R, kChunks>(pairs_, alpha, count, tokens, cache_.value_offset,
                                  cache_.value_size, j, o);
      }
      for (; j < cache_.value_size; j += 32) {
        ValuePassBf16<R, 1>(pairs_, alpha, count, tokens, cache_.value_offset, cache_.value_size, j,
                            o);
      }
    };
  }

  void UnpermuteO(float* o, int rows) const { UnpermuteRows(o, rows, cache_.value_size); }

 private:
  static constexpr int kInterleavedRows = 4 * ((R + 3) / 4);  // per head, padded with zero rows

  const CacheView& cache_;
  std::uint16_t* queries_;      // row-major, [rows][key_size]
  std::uint16_t* interleaved_;  // R >= 3: per head, RotateRowsByFour's groups
  std::uint32_t* pairs_;        // a chunk's weights of one head (PackWeightsBf16)
  float* o_;
};

// Flattened: the walks (compiled for the AVX-512 targets alone) call back into the policy's
// AVX512-BF16 functors, which GCC will not inline into them by itself. A call per 4-key score
// spills every live vector register around it (docs/cpu-flash.md §6).
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
  GemvItemWalk<GemvBf16DotProducts<R>>(task, item, scratch);
}

#undef ATTNRT_BF16_DOT
#undef ATTNRT_BF16_FLATTEN
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_BF16_GEMV_INL_H_
