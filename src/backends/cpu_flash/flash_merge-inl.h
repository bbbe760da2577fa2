// Merging the key splits of one item, per Highway target: each split left its rows' online-softmax
// state (flash_softmax-inl.h), unnormalised O_s, max m_s and sum l_s. With M = max_s m_s, each
// split takes the rescale w_s = 2^(m_s - M) and the row is Σ w_s O_s / Σ w_s l_s: no exponent
// exceeds 0, so nothing overflows.

#if defined(ATTNRT_CPU_FLASH_MERGE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_MERGE_INL_H_
#undef ATTNRT_CPU_FLASH_MERGE_INL_H_
#else
#define ATTNRT_CPU_FLASH_MERGE_INL_H_
#endif

#include <algorithm>
#include <limits>

#include "flash_plan.h"
#include "flash_rows.h"
#include "flash_simd-inl.h"
#include "flash_softmax-inl.h"

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
    // The merged row's max, the base of every split's rescale.
    float max = -std::numeric_limits<float>::infinity();
    for (int s = 0; s < item.num_splits; ++s) {
      max = std::max(max, PartialRows{item.partial + s * slot, rows, value_size}.max(m));
    }
    const float base = SoftmaxBase(max);
    float total = 0.f;
    for (int s = 0; s < item.num_splits; ++s) {
      const PartialRows split{item.partial + s * slot, rows, value_size};
      weights[s] = SoftmaxRescale(split.max(m), base);
      total += weights[s] * split.sum(m);
    }
    const float inverse = SoftmaxNormaliser(total);
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
