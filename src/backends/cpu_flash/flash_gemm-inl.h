// The GEMM path of CPU_FLASH (prefill and chunked prefill), per Highway target: GemmItem is the
// entry. Which products serve an item is flash_dispatch-inl.h's table (ChooseGemmProducts): bf16
// pairs on AMX tiles or vdpbf16ps (avx512/bf16_pair_operands-inl.h), or f32 FMAs on converted
// tiles (flash_gemm_walk-inl.h).

#if defined(ATTNRT_CPU_FLASH_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMM_INL_H_
#undef ATTNRT_CPU_FLASH_GEMM_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMM_INL_H_
#endif

#include <type_traits>

#include "flash_dispatch-inl.h"
#include "flash_gemm_walk-inl.h"
#include "flash_types.h"

// Empty off AVX-512 (included for every target, so that Highway's per-target guards stay in step).
#include "backends/cpu_flash/amx/bf16_tiles-inl.h"
#include "backends/cpu_flash/avx512/bf16_pair_gemm-inl.h"
#include "backends/cpu_flash/avx512/bf16_pair_operands-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

template <typename T>
HWY_NOINLINE void GemmItem(const ForwardTask& task, const Item& item, float* scratch) {
#if ATTNRT_AVX512_TARGET
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    switch (ChooseGemmProducts(task)) {
      case PrefillProducts::amx_tiles:
        return GemmWalk(task, item, scratch, Bf16PairOperands<AmxTileProducts>(task, scratch));
      case PrefillProducts::bf16_dot:
        return GemmWalk(task, item, scratch, Bf16PairOperands<DotPairProducts>(task, scratch));
      case PrefillProducts::f32:
        break;
    }
  }
#endif
  GemmWalk(task, item, scratch, F32Operands<T>{task, scratch});
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMM_INL_H_
