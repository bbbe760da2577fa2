// SIMD building blocks of the CPU_FLASH kernels, per Highway target: widening loads from every
// cache dtype to f32, exp2 for the softmax, cache-line prefetches. Included once per target by
// the Highway translation units (the guard toggles with HWY_TARGET_TOGGLE).

#if defined(ATTNRT_CPU_FLASH_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNRT_CPU_FLASH_SIMD_INL_H_
#undef ATTNRT_CPU_FLASH_SIMD_INL_H_
#else
#define ATTNRT_CPU_FLASH_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attnrt/core/dtype.h"
#include "backends/cpu_flash/avx512/vector_ops-inl.h"  // empty off AVX-512
#include "hwy/cache_control.h"
#include "hwy/highway.h"

#ifndef ATTNRT_CPU_FLASH_FP8_DEFINED
#define ATTNRT_CPU_FLASH_FP8_DEFINED
namespace attnrt::cpu_flash {
// One fp8-e4m3 ("fn") element as stored in the cache.
struct Fp8E4M3 {
  std::uint8_t bits;
};
}  // namespace attnrt::cpu_flash
#endif

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// ---- Widening loads: Lanes(d) cache elements to f32 (exact for every cache dtype).

template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const float* p) {
  return hn::LoadU(d, p);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const hwy::bfloat16_t* p) {
  const hn::Rebind<hwy::bfloat16_t, D> dbf;
  return hn::PromoteTo(d, hn::LoadU(dbf, p));
}

template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const hwy::float16_t* p) {
  const hn::Rebind<hwy::float16_t, D> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, p));
}

// e4m3fn: the 7 magnitude bits placed at the top of a float's exponent field make a float that is
// 2^-120 times the value (subnormals included), so one multiply re-biases; 0x7F is NaN.
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const Fp8E4M3* p) {
  const hn::RebindToUnsigned<D> du;
  const hn::Rebind<std::uint8_t, D> d8;
  const auto bits = hn::PromoteTo(du, hn::LoadU(d8, reinterpret_cast<const std::uint8_t*>(p)));
  const auto magnitude = hn::And(bits, hn::Set(du, 0x7Fu));
  const auto value = hn::Mul(hn::BitCast(d, hn::ShiftLeft<20>(magnitude)), hn::Set(d, 0x1p120f));
  const auto sign = hn::BitCast(d, hn::ShiftLeft<24>(hn::And(bits, hn::Set(du, 0x80u))));
  const auto is_nan = hn::RebindMask(d, hn::Eq(magnitude, hn::Set(du, 0x7Fu)));
  return hn::IfThenElse(is_nan, hn::Set(d, std::numeric_limits<float>::quiet_NaN()),
                        hn::Or(value, sign));
}

// ---- Scalar loads for row tails.

HWY_INLINE float ScalarF32(const float* p) {
  return *p;
}
HWY_INLINE float ScalarF32(const hwy::bfloat16_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return bf16_bits_to_float(bits);
}
HWY_INLINE float ScalarF32(const hwy::float16_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return f16_bits_to_float(bits);
}
HWY_INLINE float ScalarF32(const Fp8E4M3* p) {
  return fp8_e4m3_bits_to_float(p->bits);
}

// dst[i] = src[i] as f32 for i < n (dst may be unaligned).
template <typename T>
HWY_INLINE void ConvertRow(const T* HWY_RESTRICT src, int n, float* HWY_RESTRICT dst) {
  const DF df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  int i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(LoadF32(df, src + i), df, dst + i);
  for (; i < n; ++i) dst[i] = ScalarF32(src + i);
}

// dst[i] = scale · src[i] for i < n (unaligned).
HWY_INLINE void ScaleRow(const float* HWY_RESTRICT src, int n, float scale,
                         float* HWY_RESTRICT dst) {
  const DF df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const VF s = hn::Set(df, scale);
  int i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, src + i), s), df, dst + i);
  for (; i < n; ++i) dst[i] = src[i] * scale;
}

// dst[i] = scale · src[i · stride] for i < n: a column of a row-major matrix, gathered a vector
// at a time (i · stride must fit an int32).
HWY_INLINE void ScaleColumn(const float* HWY_RESTRICT src, int stride, int n, float scale,
                            float* HWY_RESTRICT dst) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const auto index = hn::Mul(hn::Iota(di, 0), hn::Set(di, stride));
  const VF s = hn::Set(df, scale);
  int i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Mul(hn::GatherIndex(df, src + static_cast<std::int64_t>(i) * stride, index), s),
               df, dst + i);
  }
  for (; i < n; ++i) dst[i] = src[static_cast<std::int64_t>(i) * stride] * scale;
}

// ---- exp2 for x <= 0: 2^round(x) × a degree-7 Taylor polynomial of 2^f on f in [-1/2, 1/2]
// (relative error below 1e-8, under float rounding), evaluated by Estrin's scheme: a chain of 3
// dependent operations instead of Horner's 7, since every online-softmax step waits on it.
// Below 2^-126 the result is exactly 0, so masked (-inf) scores contribute nothing.
HWY_INLINE VF Exp2(DF df, VF x) {
  const VF tiny = hn::Set(df, -126.f);
  const auto underflow = hn::Lt(x, tiny);
  x = hn::Max(x, tiny);
  const VF n = hn::Round(x);
  const VF f = hn::Sub(x, n);
  // ln2^k / k!
  const VF f2 = hn::Mul(f, f);
  const VF a0 = hn::MulAdd(hn::Set(df, 6.9314718055994531e-01f), f, hn::Set(df, 1.f));
  const VF a1 =
      hn::MulAdd(hn::Set(df, 5.5504108664821580e-02f), f, hn::Set(df, 2.4022650695910071e-01f));
  const VF a2 =
      hn::MulAdd(hn::Set(df, 1.3333558146428443e-03f), f, hn::Set(df, 9.6181291076284772e-03f));
  const VF a3 =
      hn::MulAdd(hn::Set(df, 1.5252733804059841e-05f), f, hn::Set(df, 1.5403530393381609e-04f));
  const VF f4 = hn::Mul(f2, f2);
  const VF p = hn::MulAdd(hn::MulAdd(a3, f2, a2), f4, hn::MulAdd(a1, f2, a0));
#if ATTNRT_AVX512_TARGET
  return hn::IfThenZeroElse(underflow, ScaleByPowerOfTwo(p, n));
#else
  const hn::RebindToSigned<DF> di;
  const auto exponent = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  return hn::IfThenZeroElse(underflow, hn::Mul(p, hn::BitCast(df, exponent)));
#endif
}

// ---- Prefetch every cache line of [p, p + bytes) into L1: data needed within a few hundred
// cycles.
HWY_INLINE void PrefetchBytes(const std::byte* p, int bytes) {
  for (int offset = 0; offset < bytes; offset += 64) hwy::Prefetch(p + offset);
}

// The same into L2 only where the CPU has the hint (x86's T1: L2 on Zen 4), which leaves the L1
// miss buffers to the loads; elsewhere into L1.
// On x86 the hint is an asm statement: GCC deleted loops of _mm_prefetch(T1) as dead code once
// they sat in a lambda, which took the prefetches out of the kernel without a trace.
HWY_INLINE void PrefetchBytesToL2(const std::byte* p, int bytes) {
  // Unrolled: a record is a few lines, and a loop of add/cmp/jne per line fills the reorder
  // buffer that the step's arithmetic needs.
#pragma GCC unroll 8
  for (int offset = 0; offset < bytes; offset += 64) {
#if HWY_ARCH_X86 && (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
    __asm__ __volatile__("prefetcht1 %0" : : "m"(*(p + offset)));
#else
    hwy::Prefetch(p + offset);
#endif
  }
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTNRT_CPU_FLASH_SIMD_INL_H_
