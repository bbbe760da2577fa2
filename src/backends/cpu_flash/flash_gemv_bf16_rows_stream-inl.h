// The stream path for GQA decodes on AVX512-BF16: items with four query rows per KV head (a
// decode token of a 4:1 group) that all see the same keys. As the one-row stream
// (flash_gemv_stream-inl.h) it reads each token record once, front to back: per step of eight
// keys and per KV head, K is scored for the four rows at once (the rotations of
// flash_gemv_bf16_scores-inl.h leave row r · key b in lane b of block r), the four online
// softmaxes move together, row r in lane block r, and the V lines that follow are summed into
// the rows' O with vdpbf16ps while in L1. The chunk walk instead sums V in a second pass from L2.

#if defined(ATTNRT_CPU_FLASH_GEMV_BF16_ROWS_STREAM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_BF16_ROWS_STREAM_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_BF16_ROWS_STREAM_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_BF16_ROWS_STREAM_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "flash_gemv_bf16_scores-inl.h"
#include "flash_gemv_stream-inl.h"
#include "flash_rows.h"
#include "flash_simd-inl.h"
#include "flash_types.h"

#if HWY_TARGET == HWY_AVX3
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3

// 4-key groups a step of the four-row stream takes per head (token rows of the four pages): two
// halve the O loads and stores per key and give the step two independent score chains. Batch 8,
// context 4096, 32/8 heads, one thread, from DRAM: 1 group 15 GiB/s, 2 groups 19, 4 groups 17
// (the chunk walk: 16-18).
inline constexpr int kRowStreamGroups = 2;

// o_r[...] += Σ_g Σ_b p_g[r][b] · v_gb[...] for the 4 rows and kRowStreamGroups groups of 4
// keys, in the pair-interleaved order of AddValuesBf16: keys (0, 1) and (2, 3) of a group as
// bf16 pairs, weights in lane b of block r of p_g.
ATTNRT_BF16_DOT HWY_INLINE void AddValuesFourRowsBf16(
    const __m512 (&p)[kRowStreamGroups],
    const std::uint16_t* const (&v)[kRowStreamGroups][kStreamKeys], int value_size,
    float* HWY_RESTRICT o) {
  alignas(64) std::uint32_t pairs[kRowStreamGroups][8];
  HWY_UNROLL(4)
  for (int g = 0; g < kRowStreamGroups; ++g) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(pairs[g]), (__m256i)_mm512_cvtneps_pbh(p[g]));
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

// Walks the item's keys as StreamKeys does (chunks of kGemvChunk, full ones 4 ways interleaved),
// kRowStreamGroups groups of four keys a step, for four rows per KV head; `rotated` holds each
// head's query rotations, O (rows of every head, pair-interleaved) starts at zero. Leaves each
// row's max and sum in rows.
ATTNRT_BF16_DOT HWY_INLINE void StreamFourRowsBf16(const ForwardTask& task, const Item& item,
                                                   const RowSet& rows, const std::uint16_t* rotated,
                                                   float* HWY_RESTRICT o) {
  constexpr int kGroups = kRowStreamGroups;
  constexpr int kStep = kGroups * kStreamKeys;
  const CacheView& cache = task.cache;
  const DF df;
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const VF one = hn::Set(df, 1.f);
  const int heads = item.num_kv_heads;
  // Per head: each row's running max and sums, row r in lane block r.
  alignas(64) float state_max[kMaxGemvHeads * kLanes];
  alignas(64) float state_sum[kMaxGemvHeads * kLanes];
  for (int h = 0; h < heads; ++h) {
    hn::Store(neg_inf, df, state_max + h * kLanes);
    hn::Store(hn::Zero(df), df, state_sum + h * kLanes);
  }
  const hn::RebindToSigned<DF> di;
  const auto key_lane = hn::And(hn::Iota(di, 0), hn::Set(di, 3));
  const std::byte* base[kGemvChunk];
  alignas(64) float alpha[kLanes];
  for (int first = rows.keys.begin; first < rows.keys.end; first += kGemvChunk) {
    const int count = std::min(kGemvChunk, rows.keys.end - first);
    list_chunk_tokens(task, item, first, count, count == kGemvChunk, base);
    for (int n = 0; n < count; n += kStep) {
      // Keys of each group (0 for groups past the chunk, which repeat its last key unweighted).
      int group_keys[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        group_keys[g] = std::clamp(count - n - g * kStreamKeys, 0, kStreamKeys);
      }
      for (int h = 0; h < heads; ++h) {
        const std::uint16_t* values[kGroups][kStreamKeys];
        VF s[kGroups];
        HWY_UNROLL(4)
        for (int g = 0; g < kGroups; ++g) {
          const std::uint16_t* keys[kStreamKeys];
          for (int k = 0; k < kStreamKeys; ++k) {
            const int key = std::min(n + g * kStreamKeys + k, count - 1);
            const std::byte* token = base[key] + h * cache.head_stride;
            keys[k] = reinterpret_cast<const std::uint16_t*>(token) + cache.key_offset;
            values[g][k] = reinterpret_cast<const std::uint16_t*>(token) + cache.value_offset;
          }
          const auto live = hn::RebindMask(df, hn::Lt(key_lane, hn::Set(di, group_keys[g])));
          s[g] = hn::IfThenElse(
              live, VF{FourKeysFourRows(rotated + h * 4 * cache.key_size, cache.key_size, keys)},
              neg_inf);
        }
        VF step_max = s[0];
        HWY_UNROLL(4)
        for (int g = 1; g < kGroups; ++g) step_max = hn::Max(step_max, s[g]);
        step_max = MaxOfFours(step_max);
        float* head_o = o + h * 4 * cache.value_size;
        VF m = hn::Load(df, state_max + h * kLanes);
        VF sum = hn::Load(df, state_sum + h * kLanes);
        const auto grew = hn::Gt(step_max, m);
        if (!hn::AllFalse(df, grew)) {
          const VF grown = hn::Max(m, step_max);
          // exp2(-inf) = 0 clears a row's empty start; its O is still zero then.
          const VF a = hn::IfThenElse(grew, Exp2(df, hn::Sub(m, grown)), one);
          hn::Store(a, df, alpha);
          for (int r = 0; r < 4; ++r) {
            const float scale = alpha[4 * r];
            if (scale == 1.f) continue;
            float* row = head_o + r * cache.value_size;
            for (int j = 0; j < cache.value_size; ++j) row[j] *= scale;
          }
          sum = hn::Mul(sum, a);
          m = grown;
          hn::Store(m, df, state_max + h * kLanes);
        }
        // Dead lanes (-inf) give exp2 = 0; m is finite once a step had a live key.
        __m512 p[kGroups];
        HWY_UNROLL(4)
        for (int g = 0; g < kGroups; ++g) {
          const VF pg = Exp2(df, hn::Sub(s[g], m));
          sum = hn::Add(sum, pg);
          p[g] = pg.raw;
        }
        hn::Store(sum, df, state_sum + h * kLanes);
        AddValuesFourRowsBf16(p, values, cache.value_size, head_o);
      }
    }
  }
  for (int h = 0; h < heads; ++h) {
    for (int r = 0; r < 4; ++r) {
      const float* block = state_sum + h * kLanes + 4 * r;
      rows.max[4 * h + r] = state_max[h * kLanes + 4 * r];
      rows.sum[4 * h + r] = block[0] + block[1] + block[2] + block[3];
    }
  }
}

#endif  // HWY_TARGET == HWY_AVX3

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_BF16_ROWS_STREAM_INL_H_
