#pragma once
// How the CPU_FLASH tests compare a scenario with CPU_REFERENCE: the tolerance per cache dtype, the
// options that force key splits on tiny batches, and the one-call check.

#include <gtest/gtest.h>

#include <string>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "cpu_flash_batch.h"

namespace attnrt::flash_test {

// Both backends read the same cache bytes (write_kv is bit-exact, checked below) and widen them
// exactly to f32, so the dtype changes nothing but the values: only fp32 summation order and
// exp2 vs exp (relative error ~1e-7 per weight) differ, and 2e-5 (relative to max(1, |x|))
// holds for f32, f16, bf16 and fp8-e4m3 caches alike (observed: 2.4e-7 over 800 batches).
// bf16 caches served by AVX512-BF16 dot products or AMX tiles round the query rows and the softmax
// weights to bf16 (2^-9 relative each); observed 1.3e-3 over the same 800 batches, so 5e-3.
inline double tolerance(DType dtype, const CpuFlashBackend& flash) {
  const bool dot_products = dtype == DType::bf16 && flash.rounds_bf16_products();
  return dot_products ? 5e-3 : 2e-5;
}

// Small splits and three threads, so that the split-KV path and its merge run on tiny batches.
inline CpuFlashOptions splitting_options() {
  return {3, 16, 8, 1u << 20};
}

inline void check_scenario(const Scenario& s, unsigned seed, const CpuFlashBackend& flash,
                           const std::string& what) {
  SCOPED_TRACE(what);
  Batch batch(s, seed, flash);
  const auto builder = flash.create_builder(spec_of(s).with_block_size(s.kernel_block_size),
                                            {"layer0"}, EngineConfig{}, Device::cpu());
  const auto [expected, actual] = batch.run(builder->build(0, batch.common()));
  EXPECT_TRUE(batch.caches_equal()) << "write_kv differs from CPU_REFERENCE's bytes";
  expect_close(actual, expected, tolerance(s.dtype, flash), "output");
}

}  // namespace attnrt::flash_test
