// CPU_FLASH's bf16 products against CPU_REFERENCE: f32 products stay exact, bf16 products
// (AVX512-BF16 dot products, AMX tiles) stay within their tolerance on random batches and real
// prefill shapes, and the prefill path is chosen apart from the decode path.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/simd_targets.h"
#include "cpu_flash_batch.h"
#include "cpu_flash_check.h"

namespace attnrt {
namespace {

using flash_test::Batch;
using flash_test::check_scenario;
using flash_test::describe;
using flash_test::expect_close;
using flash_test::random_scenario;
using flash_test::Scenario;
using flash_test::spec_of;
using flash_test::splitting_options;
using flash_test::tolerance;

// `count` random batches on bf16 caches, the scenarios drawn with `seed`, the data with
// first_seed + i.
void check_random_bf16_batches(const CpuFlashBackend& flash, unsigned seed, int count,
                               unsigned first_seed) {
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    Scenario s = random_scenario(rng);
    s.dtype = DType::bf16;
    check_scenario(s, first_seed + static_cast<unsigned>(i), flash, describe(s));
  }
}

// With dot products off, bf16 caches keep every product in f32 (the exact tolerance).
TEST(CpuFlashBf16ProductsTest, Bf16CachesWithoutDotProductsStayExact) {
  CpuFlashOptions options = splitting_options();
  options.bf16_products = Bf16Products::f32;
  check_random_bf16_batches(CpuFlashBackend(options), 13, 20, 300);
}

// With dot products forced, bf16 caches take them on the GEMM (prefill) and GEMV paths alike
// wherever the CPU has AVX512-BF16: odd key counts, masks, splits, MLA's aliased value.
TEST(CpuFlashBf16ProductsTest, Bf16CachesWithDotProductsStayWithinTheirTolerance) {
  CpuFlashOptions options = splitting_options();
  options.bf16_products = Bf16Products::dot;
  const CpuFlashBackend flash(options);
  check_random_bf16_batches(flash, 17, 30, 400);
  for (const auto& [head_size, requests] :
       std::vector<std::pair<int, std::vector<std::pair<int, int>>>>{
           {64, {{37, 37}, {5, 1}}}, {128, {{200, 71}, {64, 64}}}, {256, {{90, 33}}}}) {
    Scenario s;
    s.shape = AttentionShape{AttentionType::full, 8, 2, head_size, head_size};
    s.dtype = DType::bf16;
    s.requests = requests;
    check_scenario(s, 450 + head_size, flash, fmt::format("prefill head {}", head_size));
  }
  Scenario mla;
  mla.shape = AttentionShape{AttentionType::mla, 16, 1, 576, 512};
  mla.dtype = DType::bf16;
  mla.requests = {{41, 9}, {8, 5}};
  check_scenario(mla, 499, flash, "MLA 576/512 prefill");
}

// The prefill path is chosen apart from the decode path: bf16 products (AMX tiles or dot
// products) for GEMM items with f32 products for decodes. Prefill rows then differ from the
// all-f32 backend's (bf16-rounded operands: the bf16 products did run) within the tolerance;
// decode rows stay bit-identical.
TEST(CpuFlashBf16ProductsTest, PrefillTakesBf16ProductsWhileDecodesKeepF32Products) {
  CpuFlashOptions prefill_only = splitting_options();
  prefill_only.bf16_products = Bf16Products::f32;
  prefill_only.bf16_prefill_products = Bf16Products::dot;
  const CpuFlashBackend bf16_prefill(prefill_only);
  CpuFlashOptions all_f32 = splitting_options();
  all_f32.bf16_products = Bf16Products::f32;
  const CpuFlashBackend f32(all_f32);
  EXPECT_FALSE(bf16_prefill.runs_bf16_dot_products());
  EXPECT_EQ(bf16_prefill.runs_bf16_prefill_products(), cpu_flash_bf16_dot_products());
  const auto outputs = [](const Scenario& s, const CpuFlashBackend& flash) {
    Batch batch(s, 77, flash);
    const auto builder = flash.create_builder(spec_of(s).with_block_size(s.kernel_block_size),
                                              {"layer0"}, EngineConfig{}, Device::cpu());
    auto [expected, actual] = batch.run(builder->build(0, batch.common()));
    expect_close(actual, expected, tolerance(s.dtype, flash), "output");
    return actual;
  };
  Scenario prefill;
  prefill.shape = AttentionShape{AttentionType::full, 8, 2, 128, 128};
  prefill.dtype = DType::bf16;
  prefill.requests = {{200, 71}};
  const bool rows_differ = outputs(prefill, bf16_prefill) != outputs(prefill, f32);
  EXPECT_EQ(rows_differ, bf16_prefill.runs_bf16_prefill_products());
  Scenario decode = prefill;
  decode.requests = {{300, 1}, {90, 1}};
  EXPECT_EQ(outputs(decode, bf16_prefill), outputs(decode, f32));
}

}  // namespace
}  // namespace attnrt
