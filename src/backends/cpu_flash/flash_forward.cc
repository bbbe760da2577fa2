// The CPU_FLASH forward kernel, compiled once per SIMD target (Highway foreach_target) and chosen
// at run time: OpenMP threads take items dynamically, each with its own scratch, then merge the
// key splits. The per-target code re-includes this file through HWY_TARGET_INCLUDE (the path is
// relative to the project's include directory).

#include <omp.h>

#include <type_traits>

#include "flash_kernels.h"
#include "flash_plan.h"

// Order matters below: the target set, then foreach_target (which re-includes this file once
// per target), then the per-target kernels.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/backends/cpu_flash/flash_forward.cc"
#include "flash_targets.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "flash_gemm-inl.h"
#include "flash_gemv-inl.h"
#include "flash_gemv_bf16-inl.h"
#include "flash_merge-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

template <typename T>
void RunItems(const ForwardTask& task) {
  const bool parallel = task.num_threads > 1 && task.num_items + task.num_merges > 1;
#pragma omp parallel num_threads(task.num_threads) if (parallel)
  {
    float* scratch = task.scratch + omp_get_thread_num() * task.scratch_layout.total;
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < task.num_items; ++i) {
      const Item item = decode_item(task, i);
      if (task.plans[item.request].kind == ItemKind::gemm) {
        GemmItem<T>(task, item, scratch);
      } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
        GemvItemBf16Cache(task, item, scratch);
      } else {
        GemvItem<T>(task, item, scratch);
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < task.num_merges; ++i) MergeSplits(task, decode_merge(task, i));
  }
}

void RunForward(const ForwardTask& task) {
  switch (task.cache.dtype) {
    case DType::f16:
      return RunItems<hwy::float16_t>(task);
    case DType::bf16:
      return RunItems<hwy::bfloat16_t>(task);
    case DType::fp8_e4m3:
      return RunItems<Fp8E4M3>(task);
    default:
      return RunItems<float>(task);
  }
}

// Whether this target has the AVX512-BF16 path compiled in (the CPU check is separate).
bool HasBf16Dot() {
  return kHasBf16Dot;
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnrt::cpu_flash {

HWY_EXPORT(RunForward);
HWY_EXPORT(HasBf16Dot);

void run_forward(const ForwardTask& task) {
  HWY_DYNAMIC_DISPATCH(RunForward)(task);
}

bool bf16_dot_products_available() {
#if defined(__x86_64__) || defined(__i386__)
  return HWY_DYNAMIC_DISPATCH(HasBf16Dot)() && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

}  // namespace attnrt::cpu_flash
#endif  // HWY_ONCE
