// Same input, same output: CPU_FLASH's choice of bf16 products follows the CPU's features, never
// a timing, and its outputs do not depend on how busy the machine is while it computes them.

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/flash_kernels.h"
#include "backends/cpu_flash/simd_targets.h"
#include "cpu_flash_batch.h"
#include "cpu_flash_check.h"

namespace attnrt {
namespace {

// Keeps every other processor busy while alive: the load under which a timed choice would flip.
class BusyProcessors {
 public:
  BusyProcessors() {
    const unsigned count = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < count; ++i) {
      spinners_.emplace_back([this] {
        volatile std::uint64_t sink = 0;
        while (!stop_.load(std::memory_order_relaxed)) sink = sink * 6364136223846793005u + 1;
      });
    }
  }
  ~BusyProcessors() {
    stop_ = true;
    for (std::thread& spinner : spinners_) spinner.join();
  }
  BusyProcessors(const BusyProcessors&) = delete;
  BusyProcessors& operator=(const BusyProcessors&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> spinners_;
};

bool same_choice(const Bf16ProductsChoice& a, const Bf16ProductsChoice& b) {
  return a.dot_products == b.dot_products && a.prefill_bf16 == b.prefill_bf16 &&
         a.reason == b.reason;
}

// `auto` is a function of the CPU: fresh backends, asked on a quiet and on a loaded machine,
// choose alike, and say that the CPU's features chose.
TEST(CpuFlashDeterminismTest, AutoBf16ProductsDoNotChangeUnderLoad) {
  const Bf16ProductsChoice quiet = CpuFlashBackend().bf16_products();
  std::vector<Bf16ProductsChoice> loaded;
  {
    const BusyProcessors load;
    for (int i = 0; i < 20; ++i) loaded.push_back(CpuFlashBackend().bf16_products());
  }
  for (const Bf16ProductsChoice& choice : loaded) {
    EXPECT_TRUE(same_choice(choice, quiet)) << choice.reason << " vs " << quiet.reason;
  }
  if (cpu_flash_bf16_dot_products()) {
    EXPECT_NE(quiet.reason.find("(auto: "), std::string::npos) << quiet.reason;
    EXPECT_EQ(quiet.dot_products, cpu_flash::bf16_dot_products_at_fma_rate()) << quiet.reason;
    EXPECT_EQ(quiet.prefill_bf16,
              cpu_flash_amx_bf16() || cpu_flash::bf16_dot_products_at_fma_rate())
        << quiet.reason;
  } else {
    EXPECT_FALSE(quiet.dot_products);
    EXPECT_FALSE(quiet.prefill_bf16);
    EXPECT_NE(quiet.reason.find("no AVX512-BF16"), std::string::npos) << quiet.reason;
  }
}

// The same batch gives the same bits on a quiet machine, under load, and again quiet: the work
// plan depends on the batch and the thread count, never on which thread finishes first.
TEST(CpuFlashDeterminismTest, OutputsAreBitIdenticalUnderLoad) {
  const CpuFlashBackend flash(flash_test::splitting_options());
  std::mt19937 rng(45);
  for (int i = 0; i < 12; ++i) {
    flash_test::Scenario s = flash_test::random_scenario(rng);
    s.dtype = i % 3 == 0 ? DType::f16 : DType::bf16;
    SCOPED_TRACE(flash_test::describe(s));
    flash_test::Batch batch(s, 500 + static_cast<unsigned>(i), flash);
    const auto builder =
        flash.create_builder(flash_test::spec_of(s).with_block_size(s.kernel_block_size),
                             {"layer0"}, EngineConfig{}, Device::cpu());
    const AttentionMetadata& metadata = builder->build(0, batch.common());
    (void)batch.run(metadata);  // writes the step's K/V
    const std::vector<float> quiet = batch.flash_forward(metadata);
    std::vector<float> loaded;
    {
      const BusyProcessors load;
      loaded = batch.flash_forward(metadata);
    }
    const std::vector<float> again = batch.flash_forward(metadata);
    ASSERT_EQ(quiet.size(), loaded.size());
    EXPECT_EQ(std::memcmp(quiet.data(), loaded.data(), quiet.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(quiet.data(), again.data(), quiet.size() * sizeof(float)), 0);
  }
}

// The spelling the CLI's --bf16-products and the reports use, both ways.
TEST(CpuFlashDeterminismTest, Bf16ProductsNamesRoundTrip) {
  for (Bf16Products products : {Bf16Products::automatic, Bf16Products::dot, Bf16Products::f32}) {
    EXPECT_EQ(bf16_products_from_name(bf16_products_name(products)), products);
  }
  EXPECT_EQ(bf16_products_name(Bf16Products::automatic), "auto");
  EXPECT_FALSE(bf16_products_from_name("measured").has_value());
  EXPECT_FALSE(bf16_products_from_name("").has_value());
}

}  // namespace
}  // namespace attnrt
