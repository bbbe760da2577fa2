// Merging the key splits of one item, per Highway target: each split left unnormalised O rows,
// its row maxima m_s and sums l_s (log2 units). With M = max_s m_s and w_s = 2^(m_s - M), the
// row is Σ w_s O_s / Σ w_s l_s: no exponent exceeds 0, so nothing overflows.

#if defined(ATTNRT_CPU_FLASH_MERGE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_MERGE_INL_H_
#undef ATTNRT_CPU_FLASH_MERGE_INL_H_
#else
#define ATTNRT_CPU_FLASH_MERGE_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <limits>

#include "flash_plan.h"
#include "flash_rows.h"
#include "flash_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// inline: each cache dtype's translation unit has its copy (the same code, one per target).
inline HWY_NOINLINE void MergeSplits(const ForwardTask& task, const Item& item) {
  const DF df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const int value_size = task.cache.value_size;
  const int rows = item.rows();
  const std::int64_t slot = partial_slot_floats(task.plans[item.request], value_size);
  float weights[kMaxSplits];
  for (int m = 0; m < rows; ++m) {
    float max = -std::numeric_limits<float>::infinity();
    for (int s = 0; s < item.num_splits; ++s) {
      max = std::max(max, item.partial[s * slot + rows * value_size + m]);
    }
    float total = 0.f;
    for (int s = 0; s < item.num_splits; ++s) {
      const float* split = item.partial + s * slot;
      const float split_max = split[rows * value_size + m];
      weights[s] =
          split_max == -std::numeric_limits<float>::infinity() ? 0.f : std::exp2(split_max - max);
      total += weights[s] * split[rows * (value_size + 1) + m];
    }
    const float inverse = total > 0.f ? 1.f / total : 0.f;
    for (int s = 0; s < item.num_splits; ++s) weights[s] *= inverse;
    float* out = output_row(task, item, m);
    int j = 0;
    for (; j + lanes <= value_size; j += lanes) {
      VF acc = hn::Zero(df);
      for (int s = 0; s < item.num_splits; ++s) {
        acc = hn::MulAdd(hn::Set(df, weights[s]),
                         hn::LoadU(df, item.partial + s * slot + m * value_size + j), acc);
      }
      hn::StoreU(acc, df, out + j);
    }
    for (; j < value_size; ++j) {
      float acc = 0.f;
      for (int s = 0; s < item.num_splits; ++s) {
        acc += weights[s] * item.partial[s * slot + m * value_size + j];
      }
      out[j] = acc;
    }
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_MERGE_INL_H_
