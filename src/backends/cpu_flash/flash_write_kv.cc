// CPU_FLASH write_kv, per SIMD target: each token's K and V rows are rounded to the cache dtype
// exactly as attnrt::store_from_float does (ties to even; fp8 saturating to ±448), vectorised for
// f32, bf16 and (where the CPU converts in hardware) f16; fp8 goes element by element.

#include <omp.h>

#include <cstring>

#include "attnrt/attention/common_attention_metadata.h"
#include "flash_kernels.h"

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/backends/cpu_flash/flash_write_kv.cc"
#include "flash_targets.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// bf16 with ties to even; NaN keeps its top bits and is made quiet (float_to_bf16_bits).
void StoreBf16(const float* HWY_RESTRICT src, int n, std::uint16_t* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::uint16_t, decltype(df)> d16;
  const int lanes = static_cast<int>(hn::Lanes(df));
  int i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto bits = hn::BitCast(du, hn::LoadU(df, src + i));
    const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), odd)));
    const auto magnitude = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
    const auto is_nan = hn::RebindMask(du, hn::Gt(magnitude, hn::Set(di, 0x7F800000)));
    const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
    const auto result = hn::BitCast(di, hn::IfThenElse(is_nan, quiet_nan, rounded));
    hn::StoreU(hn::DemoteTo(d16, result), d16, dst + i);
  }
  for (; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
}

void StoreF16(const float* HWY_RESTRICT src, int n, std::uint16_t* HWY_RESTRICT dst) {
  int i = 0;
#if HWY_TARGET == HWY_AVX2 || ATTNRT_AVX512_TARGET || HWY_TARGET == HWY_NEON
  // Hardware conversion (F16C / NEON): IEEE round-to-nearest-even, like float_to_f16_bits.
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int lanes = static_cast<int>(hn::Lanes(df));
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, src + i)), dh,
               reinterpret_cast<hwy::float16_t*>(dst + i));
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_f16_bits(src[i]);
}

void StoreRow(DType dtype, const float* src, int n, std::byte* dst) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case DType::bf16:
      return StoreBf16(src, n, reinterpret_cast<std::uint16_t*>(dst));
    case DType::f16:
      return StoreF16(src, n, reinterpret_cast<std::uint16_t*>(dst));
    default:
      for (int i = 0; i < n; ++i) store_from_float(dtype, dst + i, src[i]);
  }
}

void WriteToken(const WriteTask& task, int t) {
  const std::int64_t slot = task.slot_mapping[t];
  if (slot == PAD_SLOT_ID) return;
  const CacheView& cache = task.cache;
  for (int h = 0; h < task.num_kv_heads; ++h) {
    std::byte* content = cache.slot(slot, h);
    StoreRow(cache.dtype, task.key.row(t, h), cache.key_size,
             content + cache.key_offset * cache.element_size);
    if (task.writes_value) {
      StoreRow(cache.dtype, task.value.row(t, h), cache.value_size,
               content + cache.value_offset * cache.element_size);
    }
  }
}

void WriteKV(const WriteTask& task) {
  const bool parallel = task.num_threads > 1 && task.num_tokens > 64;
#pragma omp parallel for num_threads(task.num_threads) if (parallel) schedule(static)
  for (int t = 0; t < task.num_tokens; ++t) WriteToken(task, t);
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnrt::cpu_flash {

HWY_EXPORT(WriteKV);
HWY_EXPORT(TargetName);

void run_write_kv(const WriteTask& task) {
  HWY_DYNAMIC_DISPATCH(WriteKV)(task);
}

const char* dispatched_target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace attnrt::cpu_flash
#endif  // HWY_ONCE
