// run_forward: the CPU_FLASH forward kernel of the cache's dtype (flash_forward_<dtype>.cc, each
// compiled once per SIMD target); and whether the dispatched target has the AVX512-BF16 path.
// The per-target code re-includes this file through HWY_TARGET_INCLUDE (the path is relative to
// the project's include directory).

#include "flash_kernels.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/backends/cpu_flash/flash_forward.cc"
#include "flash_targets.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "flash_dispatch-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {

// Whether this target has the AVX512-BF16 path compiled in (the CPU check is separate).
bool HasBf16Dot() {
  return kHasBf16Dot;
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnrt::cpu_flash {

HWY_EXPORT(HasBf16Dot);

void run_forward(const ForwardTask& task) {
  switch (task.cache.dtype) {
    case DType::f16:
      return run_forward_f16(task);
    case DType::bf16:
      return run_forward_bf16(task);
    case DType::fp8_e4m3:
      return run_forward_fp8(task);
    default:
      return run_forward_f32(task);
  }
}

bool stream_prefetch_helps() {
#if defined(__x86_64__) && defined(__linux__)
  // AMD before Zen 5 (family 0x1A): there the same prefetches cost 5-25 % (docs/cpu-flash.md §6).
  static const bool helps = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__builtin_cpu_is("amd") || __get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    const unsigned base_family = (eax >> 8) & 0xF, extended_family = (eax >> 20) & 0xFF;
    const unsigned family = base_family == 0xF ? base_family + extended_family : base_family;
    constexpr unsigned kZen5Family = 0x1A;
    return family < kZen5Family;
  }();
  return helps;
#else
  return false;
#endif
}

bool bf16_dot_products_at_fma_rate() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_is("amd") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

bool bf16_dot_products_available() {
#if defined(__x86_64__) || defined(__i386__)
  return HWY_DYNAMIC_DISPATCH(HasBf16Dot)() && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

bool amx_bf16_available() {
#if defined(__x86_64__) && defined(__linux__)
  // The CPU and the OS are asked once; the dispatched target (pinned in tests) every time.
  static const bool granted = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
    if ((edx & kAmxBf16) == 0 || (edx & kAmxTile) == 0) return false;
    constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
    constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return granted && bf16_dot_products_available();
#else
  return false;
#endif
}

PrefillProducts bf16_prefill_products_available() {
  if (amx_bf16_available()) return PrefillProducts::amx_tiles;
  if (bf16_dot_products_available()) return PrefillProducts::bf16_dot;
  return PrefillProducts::f32;
}

}  // namespace attnrt::cpu_flash
#endif  // HWY_ONCE
