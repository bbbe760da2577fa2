// CpuFlashOptions, the one set of CPU_FLASH defaults: the default thread count (OMP_NUM_THREADS,
// else every processor; never the OpenMP default a host library may have lowered, as PyTorch
// does), the split caps, and what the built-in registry changes.

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/bf16_products.h"
#include "backends/cpu_flash/simd_targets.h"

namespace attnrt {
namespace {

// Sets OMP_NUM_THREADS (or unsets it) for one test and restores it after.
class ScopedThreadsVariable {
 public:
  explicit ScopedThreadsVariable(const char* value) {
    if (const char* old = std::getenv("OMP_NUM_THREADS")) saved_ = old;
    if (value != nullptr) {
      setenv("OMP_NUM_THREADS", value, 1);
    } else {
      unsetenv("OMP_NUM_THREADS");
    }
  }
  ~ScopedThreadsVariable() {
    if (saved_) {
      setenv("OMP_NUM_THREADS", saved_->c_str(), 1);
    } else {
      unsetenv("OMP_NUM_THREADS");
    }
  }
  ScopedThreadsVariable(const ScopedThreadsVariable&) = delete;
  ScopedThreadsVariable& operator=(const ScopedThreadsVariable&) = delete;

 private:
  std::optional<std::string> saved_;
};

TEST(CpuFlashOptionsTest, DefaultIgnoresALoweredOpenMPDefault) {
  const ScopedThreadsVariable unset(nullptr);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);  // what `import torch` does on a machine it counts one core on
  EXPECT_EQ(CpuFlashBackend().num_threads(), omp_get_num_procs());
  omp_set_num_threads(before);
}

TEST(CpuFlashOptionsTest, OmpNumThreadsAndExplicitCountsWin) {
  {
    const ScopedThreadsVariable three("3");
    EXPECT_EQ(CpuFlashBackend().num_threads(), 3);
  }
  {
    const ScopedThreadsVariable nested("5,2");
    EXPECT_EQ(CpuFlashBackend().num_threads(), 5);
  }
  {
    const ScopedThreadsVariable garbage("many");
    EXPECT_EQ(CpuFlashBackend().num_threads(), omp_get_num_procs());
  }
  EXPECT_EQ(CpuFlashBackend(CpuFlashOptions{.num_threads = 7}).num_threads(), 7);
}

TEST(CpuFlashOptionsTest, DefaultsStayWithinTheKernelCaps) {
  const CpuFlashOptions defaults;
  EXPECT_GE(defaults.max_splits, 1);
  EXPECT_LE(defaults.max_splits, CpuFlashOptions::kMaxSplits);
  EXPECT_GE(defaults.min_split_keys, 1);
  EXPECT_FALSE(defaults.stream_prefetch.has_value());  // the CPU decides
}

// The registry's CPU_FLASH (what `attnrt run`, the Python module and embedders get) runs the
// defaults, so the path `attnrt bench attention` measures is the path the engine runs.
TEST(CpuFlashOptionsTest, TheRegistryBackendRunsTheDefaults) {
  const auto* flash =
      dynamic_cast<const CpuFlashBackend*>(builtin_backends().get("CPU_FLASH").get());
  ASSERT_NE(flash, nullptr);
  const CpuFlashOptions defaults;
  const CpuFlashOptions& used = flash->options();
  EXPECT_EQ(used.num_threads, defaults.num_threads);
  EXPECT_EQ(used.min_split_keys, defaults.min_split_keys);
  EXPECT_EQ(used.max_splits, defaults.max_splits);
  EXPECT_EQ(used.partial_bytes, defaults.partial_bytes);
  EXPECT_EQ(defaults.bf16_products, Bf16Products::automatic);
  EXPECT_EQ(used.bf16_products, defaults.bf16_products);
  EXPECT_EQ(flash->bf16_products().dot_products, CpuFlashBackend().bf16_products().dot_products);
  EXPECT_EQ(flash->bf16_products().prefill_bf16, CpuFlashBackend().bf16_products().prefill_bf16);
  EXPECT_FALSE(defaults.bf16_prefill_products.has_value());  // prefill follows bf16_products
}

// Asked for f32 products, a backend never takes dot products; asked for dot products, it takes
// them wherever the CPU has them; auto, it says which feature of the CPU chose.
TEST(CpuFlashOptionsTest, Bf16ProductsFollowTheRequestAndSayWhy) {
  const Bf16ProductsChoice f32 =
      CpuFlashBackend({.bf16_products = Bf16Products::f32}).bf16_products();
  EXPECT_FALSE(f32.dot_products);
  EXPECT_NE(f32.reason.find("f32 products"), std::string::npos) << f32.reason;
  const Bf16ProductsChoice dot =
      CpuFlashBackend({.bf16_products = Bf16Products::dot}).bf16_products();
  EXPECT_EQ(dot.dot_products, cpu_flash_bf16_dot_products()) << dot.reason;
  EXPECT_EQ(dot.prefill_bf16, cpu_flash_bf16_dot_products()) << dot.reason;
  EXPECT_FALSE(f32.prefill_bf16);
  // Each path follows its own request.
  const Bf16ProductsChoice prefill_only =
      CpuFlashBackend(
          {.bf16_products = Bf16Products::f32, .bf16_prefill_products = Bf16Products::dot})
          .bf16_products();
  EXPECT_FALSE(prefill_only.dot_products);
  EXPECT_EQ(prefill_only.prefill_bf16, cpu_flash_bf16_dot_products()) << prefill_only.reason;
  if (cpu_flash_bf16_dot_products()) {
    const char* kind = cpu_flash_amx_bf16() ? "prefill AMX-BF16 tiles" : "prefill AVX512-BF16 dot";
    EXPECT_NE(prefill_only.reason.find(kind), std::string::npos) << prefill_only.reason;
  }
  const Bf16ProductsChoice automatic = CpuFlashBackend().bf16_products();
  if (cpu_flash_bf16_dot_products()) {
    EXPECT_NE(automatic.reason.find("(auto: "), std::string::npos) << automatic.reason;
  } else {
    EXPECT_FALSE(automatic.dot_products);
    EXPECT_FALSE(automatic.prefill_bf16);
    EXPECT_NE(automatic.reason.find("no AVX512-BF16"), std::string::npos) << automatic.reason;
  }
}

// The choice is made once, at the first question, whichever thread asks it; a copy of the backend
// shares it (a copy would ask the same question of the same machine).
TEST(CpuFlashOptionsTest, Bf16ProductsAreChosenOnceAndSharedByCopies) {
  const CpuFlashBackend backend;
  const CpuFlashBackend copy = backend;  // before the first question
  std::vector<const Bf16ProductsChoice*> seen(4, nullptr);
  std::vector<std::thread> askers;
  for (std::size_t i = 0; i < seen.size(); ++i)
    askers.emplace_back([&, i] { seen[i] = &backend.bf16_products(); });
  for (std::thread& asker : askers) asker.join();
  for (const Bf16ProductsChoice* choice : seen) EXPECT_EQ(choice, seen[0]);
  EXPECT_EQ(&copy.bf16_products(), seen[0]);
  EXPECT_FALSE(seen[0]->reason.empty());
}

// The kernels run dot products only where they were chosen and the CPU and target have them.
TEST(CpuFlashOptionsTest, RunsBf16DotProductsOnlyWhereChosenAndAvailable) {
  EXPECT_FALSE(CpuFlashBackend({.bf16_products = Bf16Products::f32}).runs_bf16_dot_products());
  EXPECT_EQ(CpuFlashBackend({.bf16_products = Bf16Products::dot}).runs_bf16_dot_products(),
            cpu_flash_bf16_dot_products());
  const CpuFlashBackend automatic;
  EXPECT_EQ(automatic.runs_bf16_dot_products(),
            automatic.bf16_products().dot_products && cpu_flash_bf16_dot_products());
  EXPECT_FALSE(CpuFlashBackend({.bf16_products = Bf16Products::f32}).runs_bf16_prefill_products());
  EXPECT_EQ(automatic.runs_bf16_prefill_products(),
            automatic.bf16_products().prefill_bf16 && cpu_flash_bf16_dot_products());
}

// Each probe (what `attnrt bench attention` reports) compares its two paths on the same batch:
// bf16 products (decode: dot products; prefill: AMX tiles or dot products) stay within their
// documented tolerance of the f32 products.
TEST(CpuFlashOptionsTest, TheBf16ProbesMeasureBothPathsWithinTolerance) {
  if (!cpu_flash_bf16_dot_products()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (const auto probe_case :
       {cpu_flash::Bf16ProbeCase::decode_dot, cpu_flash::Bf16ProbeCase::prefill}) {
    SCOPED_TRACE(probe_case == cpu_flash::Bf16ProbeCase::prefill ? "prefill" : "decode");
    const cpu_flash::Bf16ProductsProbe probe = cpu_flash::probe_bf16_products(2, probe_case);
    EXPECT_GT(probe.dot_seconds, 0);
    EXPECT_GT(probe.f32_seconds, 0);
    EXPECT_GT(probe.max_error, 0);  // the paths differ: the bf16 products really ran
    EXPECT_LE(probe.max_error, kBf16DotTolerance);
  }
}

}  // namespace
}  // namespace attnrt
