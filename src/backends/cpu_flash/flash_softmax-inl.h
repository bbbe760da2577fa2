// The online-softmax state that every CPU_FLASH path keeps per query row, per Highway target.
// A row holds the running max m of its scores (log2 units), the running sum l of 2^(s - m), and
// O = Σ 2^(s - m) · v unnormalised. When a tile raises the max to m', l and O take the rescale
// α = 2^(m - m'); a finished row is O / l; the key splits of one row merge with the same rescale
// (MergeSplits). Until a row has seen a visible key its max is -inf, and the base of its
// exponents is 0 instead: a masked (-inf) score then weighs exactly 0, never NaN, and the row's
// α is 0 (its l and O are still 0). The paths differ only in where the state lives: rows along
// lanes (GEMM tiles, the four-row stream), one row per scalar (the GEMV chunk walk, the
// one-row stream).

#if defined(ATTNRT_CPU_FLASH_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_SOFTMAX_INL_H_
#undef ATTNRT_CPU_FLASH_SOFTMAX_INL_H_
#else
#define ATTNRT_CPU_FLASH_SOFTMAX_INL_H_
#endif

#include <cmath>
#include <limits>

#include "flash_rows.h"
#include "flash_simd-inl.h"
#include "flash_types.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// ---- The base of a row's exponents: its max, or 0 while the max is -inf.

HWY_INLINE VF SoftmaxBase(DF df, VF max) {
  return hn::IfThenZeroElse(hn::Eq(max, hn::Set(df, -std::numeric_limits<float>::infinity())), max);
}
inline float SoftmaxBase(float max) {
  return max == -std::numeric_limits<float>::infinity() ? 0.f : max;
}

// ---- The weights 2^(s - base) of scores, and the rescale α = 2^(old_max - base) that a row's
// sum and O take when its max rises to `base`.

HWY_INLINE VF SoftmaxWeights(DF df, VF scores, VF base) {
  return Exp2(df, hn::Sub(scores, base));
}
HWY_INLINE VF SoftmaxRescale(DF df, VF old_max, VF base) {
  return Exp2(df, hn::Sub(old_max, base));
}
inline float SoftmaxRescale(float old_max, float base) {
  return std::exp2(old_max - base);
}

// ---- One tile's update of rows along lanes: the raised max, its base and the rescale.

struct SoftmaxRaise {
  VF max;
  VF base;
  VF alpha;
};

// With `slack` > 0 (log2 units) the max moves only where the tile's exceeds it by more than
// slack: weights then reach 2^slack at most, and most tiles leave α = 1 exactly, which a path
// that rescales O in a pass of its own (bf16 pairs) skips. The state stays exact either way: l
// and O share the max.
HWY_INLINE SoftmaxRaise RaiseMax(DF df, VF old_max, VF tile_max, float slack = 0.f) {
  const VF max = slack > 0.f
                     ? hn::IfThenElse(hn::Gt(tile_max, hn::Add(old_max, hn::Set(df, slack))),
                                      tile_max, old_max)
                     : hn::Max(old_max, tile_max);
  const VF base = SoftmaxBase(df, max);
  return {max, base, SoftmaxRescale(df, old_max, base)};
}

// l' = α · l + the tile's sum of weights.
HWY_INLINE VF RescaledSum(VF sum, VF alpha, VF tile_sum) {
  return hn::MulAdd(sum, alpha, tile_sum);
}
inline float RescaledSum(float sum, float alpha, float tile_sum) {
  return sum * alpha + tile_sum;
}

// ---- A finished row: 1 / l, and 0 for a row that saw no key (its output is 0).

inline float SoftmaxNormaliser(float sum) {
  return sum > 0.f ? 1.f / sum : 0.f;
}

// Where row m of an item ends: its output row, scaled by 1 / l; or, for a split, its partial
// state, unscaled (exact), whose max and sum this writes.
struct RowTarget {
  float* dst;
  float scale;
};

HWY_INLINE RowTarget FinishRowTarget(const ForwardTask& task, const Item& item, const RowSet& rows,
                                     int m) {
  if (item.partial == nullptr) {
    return {output_row(task, item, m), SoftmaxNormaliser(rows.sum[m])};
  }
  const PartialRows partial{item.partial, rows.count, task.cache.value_size};
  partial.max(m) = rows.max[m];
  partial.sum(m) = rows.sum[m];
  return {partial.o(m), 1.f};
}

// Writes each row's O / l into the output, or its state (O, max, sum) into the item's split
// partial for MergeSplits. copy_o(m, scale, dst) writes row m's unnormalised O times `scale`
// to dst[0, value_size), from wherever the path keeps it.
template <class CopyO>
HWY_INLINE void FinishRows(const ForwardTask& task, const Item& item, const RowSet& rows,
                           const CopyO& copy_o) {
  for (int m = 0; m < rows.count; ++m) {
    const RowTarget target = FinishRowTarget(task, item, rows, m);
    copy_o(m, target.scale, target.dst);
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_SOFTMAX_INL_H_
