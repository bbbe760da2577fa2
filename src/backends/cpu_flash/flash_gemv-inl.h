// The GEMV path of CPU_FLASH (decode-like items with at most kGemvMaxRows rows per KV head), per
// Highway target: GemvItem is the entry. Which products serve an item is flash_dispatch-inl.h's
// table (UsesBf16Dot): AVX512-BF16 dot products (avx512/bf16_gemv-inl.h) or f32 FMAs
// (flash_gemv_walk-inl.h); either way one driver, GemvItemWalk, walks the item.

#if defined(ATTNRT_CPU_FLASH_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_GEMV_INL_H_
#undef ATTNRT_CPU_FLASH_GEMV_INL_H_
#else
#define ATTNRT_CPU_FLASH_GEMV_INL_H_
#endif

#include <type_traits>

#include "flash_dispatch-inl.h"
#include "flash_gemv_walk-inl.h"
#include "flash_types.h"

// Empty off AVX-512 (included for every target, so that Highway's per-target guards stay in step).
#include "backends/cpu_flash/avx512/bf16_gemv-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// One item with R rows per KV head and f32 products (a kernel per R, as GemvItemBf16).
template <typename T, int R>
HWY_NOINLINE void GemvItemRows(const ForwardTask& task, const Item& item, float* scratch) {
  GemvItemWalk<GemvF32Products<T, R>>(task, item, scratch);
}

// Calls f(std::integral_constant<int, R>{}) for the item's R rows per KV head, so that each R
// has its own kernel.
template <class F>
HWY_INLINE void WithRowsPerKvHead(const Item& item, const F& f) {
  static_assert(kGemvMaxRows == 8);
  switch (item.rows_per_kv_head()) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 6:
      return f(std::integral_constant<int, 6>{});
    case 7:
      return f(std::integral_constant<int, 7>{});
    default:
      return f(std::integral_constant<int, 8>{});
  }
}

// One GEMV item of a cache of T: bf16 dot products where UsesBf16Dot says, f32 products
// otherwise.
template <typename T>
HWY_INLINE void GemvItem(const ForwardTask& task, const Item& item, float* scratch) {
#if ATTNRT_AVX512_TARGET
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    if (UsesBf16Dot(task)) {
      return WithRowsPerKvHead(item, [&](auto r) { GemvItemBf16<r()>(task, item, scratch); });
    }
  }
#endif
  WithRowsPerKvHead(item, [&](auto r) { GemvItemRows<T, r()>(task, item, scratch); });
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_GEMV_INL_H_
