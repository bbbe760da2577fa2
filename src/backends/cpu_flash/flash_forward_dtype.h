// One cache dtype's CPU_FLASH forward kernel, compiled once per SIMD target (Highway
// foreach_target) and chosen at run time. Each flash_forward_<dtype>.cc defines
// ATTNRT_FLASH_CACHE_T (the cache element type), ATTNRT_FLASH_KERNEL (the per-target entry) and
// ATTNRT_FLASH_DISPATCH (its dispatcher, declared in flash_kernels.h), then includes this file:
// one translation unit per dtype, so that the four build in parallel. OpenMP threads take items
// dynamically, each with its own scratch, then merge the key splits.
//
// No include guard: foreach_target re-includes this file once per target (HWY_TARGET_INCLUDE;
// the path is relative to the project's include directory).

#include <omp.h>

#include "flash_kernels.h"
#include "flash_plan.h"

// Order matters below: the target set, then foreach_target (which re-includes this file once
// per target), then the per-target kernels.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/backends/cpu_flash/flash_forward_dtype.h"
#include "flash_targets.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "flash_gemm-inl.h"
#include "flash_gemv-inl.h"
#include "flash_merge-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

void ATTNRT_FLASH_KERNEL(const ForwardTask& task) {
  using T = ATTNRT_FLASH_CACHE_T;
  const bool parallel = task.num_threads > 1 && task.num_items + task.num_merges > 1;
#pragma omp parallel num_threads(task.num_threads) if (parallel)
  {
    float* scratch = task.scratch + omp_get_thread_num() * task.scratch_layout.total;
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < task.num_items; ++i) {
      const Item item = decode_item(task, i);
      if (task.plans[item.request].kind == ItemKind::gemm) {
        GemmItem<T>(task, item, scratch);
      } else {
        GemvItem<T>(task, item, scratch);
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < task.num_merges; ++i) MergeSplits(task, decode_merge(task, i));
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnrt::cpu_flash {

HWY_EXPORT(ATTNRT_FLASH_KERNEL);

void ATTNRT_FLASH_DISPATCH(const ForwardTask& task) {
  HWY_DYNAMIC_DISPATCH(ATTNRT_FLASH_KERNEL)(task);
}

}  // namespace attnrt::cpu_flash
#endif  // HWY_ONCE
