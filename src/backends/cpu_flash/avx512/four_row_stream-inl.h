// The stream path for GQA decodes on AVX-512: items with four query rows per KV head (a decode
// token of a 4:1 group) that all see the same keys. As the one-row stream
// (flash_gemv_stream-inl.h) it reads each token record once, front to back: per step of eight
// keys and per KV head, K is scored for the four rows at once (the rotations of
// flash_gemv_scores-inl.h leave row r · key b in lane b of block r), the four online softmaxes
// move together, row r in lane block r, and the V lines that follow are summed into the rows' O
// while in L1. The chunk walk instead sums V in a second pass from L2. The f32-product PV is
// here; the AVX512-BF16 one in bf16_four_row_values-inl.h.

#if defined(ATTNRT_CPU_FLASH_AVX512_FOUR_ROW_STREAM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_AVX512_FOUR_ROW_STREAM_INL_H_
#undef ATTNRT_CPU_FLASH_AVX512_FOUR_ROW_STREAM_INL_H_
#else
#define ATTNRT_CPU_FLASH_AVX512_FOUR_ROW_STREAM_INL_H_
#endif

#include <algorithm>
#include <limits>

#include "backends/cpu_flash/avx512/f32_four_row_scores-inl.h"
#include "backends/cpu_flash/flash_gemv_scores-inl.h"
#include "backends/cpu_flash/flash_gemv_stream-inl.h"
#include "backends/cpu_flash/flash_rows.h"
#include "backends/cpu_flash/flash_simd-inl.h"
#include "backends/cpu_flash/flash_softmax-inl.h"
#include "backends/cpu_flash/flash_types.h"

#if ATTNRT_AVX512_TARGET
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

#if ATTNRT_AVX512_TARGET
// 4-key groups a step of the four-row stream takes per head (one token row of four pages each):
// two halve the O loads and stores per key and give the step two independent score chains;
// four spill (docs/cpu-flash.md §6).
inline constexpr int kRowStreamGroups = 2;

// Token records (for one KV head) of the keys of a four-row stream step, by group.
using StepTokens = const std::byte* [kRowStreamGroups][kStreamKeys];

// Keys of a four-row stream chunk, listed 8 ways: a step (two groups of four) is then one token
// row of eight pages, which keeps the two rows of a page out of one step; and, where
// task.stream_prefetch says (AMD before Zen 5), each step asks L2 for the next step's records of
// its head (prefetcht1: L2 only on Zen 4, where prefetcht0 took the L1 miss buffers the walk
// needs). The next row of a page starts a new 4 KiB page, which Zen 4's hardware prefetchers do not
// enter; on Sapphire Rapids and Zen 5 the same prefetches cost about a fifth of the speed
// (docs/cpu-flash.md §6).
inline constexpr int kRowStreamChunk = 128;
inline constexpr int kRowStreamWays = 8;

// Walks the item's keys in chunks of kRowStreamChunk (full ones kRowStreamWays ways
// interleaved), kRowStreamGroups groups of four keys a step, for four rows per KV head, O (rows
// of every head) starting at zero. score(h, tokens) returns row r · key b (log2 units) in lane b
// of block r for head h and the token records of one group; add_values(p, tokens, head_o) sums a
// step's V lines into the head's O, group g weighted by p[g] (lane b of block r: row r, key b).
// Leaves each row's max and sum in rows.
template <class Score, class AddValues>
HWY_INLINE void StreamFourRows(const ForwardTask& task, const Item& item, const RowSet& rows,
                               float* HWY_RESTRICT o, const Score& score,
                               const AddValues& add_values) {
  constexpr int kGroups = kRowStreamGroups;
  constexpr int kStep = kGroups * kStreamKeys;
  const CacheView& cache = task.cache;
  const DF df;
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
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
  const int record_bytes = cache.stored_bytes();
  // Two chunk lists: the walk's, and the next chunk's, whose first records the last step
  // prefetches.
  const std::byte* lists[2][kRowStreamChunk];
  const auto chunk_count = [&](int first) {
    return std::max(0, std::min(kRowStreamChunk, rows.keys.end - first));
  };
  const auto list_chunk = [&](int first, const std::byte** tokens) {
    const int count = chunk_count(first);
    const int ways = count == kRowStreamChunk ? kRowStreamWays : 1;
    list_chunk_tokens(task, item, first, count, ways, tokens);
  };
  alignas(64) float alpha[kLanes];
  int current = 0;
  if (rows.keys.begin < rows.keys.end) list_chunk(rows.keys.begin, lists[current]);
  for (int first = rows.keys.begin; first < rows.keys.end; first += kRowStreamChunk) {
    const int count = chunk_count(first);
    const std::byte* const* base = lists[current];
    const int next_count = chunk_count(first + kRowStreamChunk);
    if (next_count > 0) list_chunk(first + kRowStreamChunk, lists[current ^ 1]);
    for (int n = 0; n < count; n += kStep) {
      // The step's token records of head 0, and per group its live keys (the chunk's last steps
      // repeat its last key, unweighted); both serve every head.
      StepTokens step_tokens;
      hn::Mask<DF> live[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        for (int k = 0; k < kStreamKeys; ++k) {
          step_tokens[g][k] = base[std::min(n + g * kStreamKeys + k, count - 1)];
        }
        const int keys = std::clamp(count - n - g * kStreamKeys, 0, kStreamKeys);
        live[g] = hn::RebindMask(df, hn::Lt(key_lane, hn::Set(di, keys)));
      }
      const bool full_step = count - n >= kStep;
      // The next step's records: the chunk's next keys, or the next chunk's first.
      const bool last_step = n + kStep >= count;
      const std::byte* const* ahead = last_step ? lists[current ^ 1] : base + n + kStep;
      const int ahead_count = std::min(kStep, last_step ? next_count : count - n - kStep);
      const auto prefetch_head = [&](int h) {
        if (!task.stream_prefetch) return;
        for (int i = 0; i < ahead_count; ++i) {
          PrefetchBytesToL2(ahead[i] + h * cache.head_stride, record_bytes);
        }
      };
      // The head's records of the step and its scores (dead keys -inf).
      const auto score_head = [&](int h, StepTokens& tokens, VF(&s)[kGroups]) {
        const std::int64_t offset = h * cache.head_stride;
        HWY_UNROLL(4)
        for (int g = 0; g < kGroups; ++g) {
          for (int k = 0; k < kStreamKeys; ++k) tokens[g][k] = step_tokens[g][k] + offset;
          s[g] = score(h, tokens[g]);
          if (!full_step) s[g] = hn::IfThenElse(live[g], s[g], neg_inf);
        }
      };
      // The online softmax of the head's step (flash_softmax-inl.h, rows in lane blocks): its
      // weights, O rescaled when a row's max grew.
      const auto weigh_head = [&](int h, const VF(&s)[kGroups], VF(&p)[kGroups]) {
        VF step_max = s[0];
        HWY_UNROLL(4)
        for (int g = 1; g < kGroups; ++g) step_max = hn::Max(step_max, s[g]);
        step_max = MaxOfFours(step_max);
        float* head_o = o + h * 4 * cache.value_size;
        VF m = hn::Load(df, state_max + h * kLanes);
        VF sum = hn::Load(df, state_sum + h * kLanes);
        const auto grew = hn::Gt(step_max, m);
        if (!hn::AllFalse(df, grew)) {
          // Rows whose max stays take α = 1 exactly; a row's first keys take 0, O still zero.
          const SoftmaxRaise raise = RaiseMax(df, m, step_max);
          hn::Store(raise.alpha, df, alpha);
          for (int r = 0; r < 4; ++r) {
            const float scale = alpha[4 * r];
            if (scale == 1.f) continue;
            float* row = head_o + r * cache.value_size;
            for (int j = 0; j < cache.value_size; ++j) row[j] *= scale;
          }
          sum = hn::Mul(sum, raise.alpha);
          m = raise.max;
          hn::Store(m, df, state_max + h * kLanes);
        }
        // Dead lanes (-inf) weigh 0.
        const VF softmax_base = SoftmaxBase(df, m);
        HWY_UNROLL(4)
        for (int g = 0; g < kGroups; ++g) {
          p[g] = SoftmaxWeights(df, s[g], softmax_base);
          sum = hn::Add(sum, p[g]);
        }
        hn::Store(sum, df, state_sum + h * kLanes);
      };
      for (int h = 0; h < heads; ++h) {
        prefetch_head(h);
        StepTokens tokens;
        VF s[kGroups], p[kGroups];
        score_head(h, tokens, s);
        weigh_head(h, s, p);
        add_values(p, tokens, o + h * 4 * cache.value_size);
      }
    }
    current ^= 1;
  }
  for (int h = 0; h < heads; ++h) {
    for (int r = 0; r < 4; ++r) {
      const float* block = state_sum + h * kLanes + 4 * r;
      rows.max[4 * h + r] = state_max[h * kLanes + 4 * r];
      rows.sum[4 * h + r] = block[0] + block[1] + block[2] + block[3];
    }
  }
}

// The f32-product PV of a four-row stream step: per 32 value entries, the 4 rows' accumulators
// stay in registers over the step's keys, each V chunk converted once for the 4 rows.
template <typename T>
struct AddValuesFourRowsF32 {
  int value_offset;
  int value_size;  // a multiple of 32
  HWY_INLINE void operator()(const VF (&p)[kRowStreamGroups], const StepTokens& tokens,
                             float* HWY_RESTRICT o) const {
    const DF df;
    alignas(64) float weights[kRowStreamGroups][kLanes];
    const T* values[kRowStreamGroups][kStreamKeys];
    for (int g = 0; g < kRowStreamGroups; ++g) {
      hn::Store(p[g], df, weights[g]);
      for (int k = 0; k < kStreamKeys; ++k) {
        values[g][k] = reinterpret_cast<const T*>(tokens[g][k]) + value_offset;
      }
    }
    // The weights are broadcast from memory (an FMA's embedded broadcast): without this barrier
    // the compiler derives each from the p registers with a permute and spills the indices.
    __asm__ __volatile__("" : : "r"(&weights[0][0]) : "memory");
    for (int j = 0; j < value_size; j += 2 * kLanes) {
      VF acc[4][2];
      HWY_UNROLL(4)
      for (int r = 0; r < 4; ++r) {
        acc[r][0] = hn::LoadU(df, o + r * value_size + j);
        acc[r][1] = hn::LoadU(df, o + r * value_size + j + kLanes);
      }
      HWY_UNROLL(2)
      for (int g = 0; g < kRowStreamGroups; ++g) {
        HWY_UNROLL(4)
        for (int k = 0; k < kStreamKeys; ++k) {
          const VF x0 = LoadF32(df, values[g][k] + j);
          const VF x1 = LoadF32(df, values[g][k] + j + kLanes);
          HWY_UNROLL(4)
          for (int r = 0; r < 4; ++r) {
            const VF w = hn::Set(df, weights[g][4 * r + k]);
            acc[r][0] = hn::MulAdd(w, x0, acc[r][0]);
            acc[r][1] = hn::MulAdd(w, x1, acc[r][1]);
          }
        }
      }
      HWY_UNROLL(4)
      for (int r = 0; r < 4; ++r) {
        hn::StoreU(acc[r][0], df, o + r * value_size + j);
        hn::StoreU(acc[r][1], df, o + r * value_size + j + kLanes);
      }
    }
  }
};
#endif  // ATTNRT_AVX512_TARGET

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_AVX512_FOUR_ROW_STREAM_INL_H_
