// CpuFlashOptions, the one set of CPU_FLASH defaults: the default thread count (OMP_NUM_THREADS,
// else every processor; never the OpenMP default a host library may have lowered, as PyTorch
// does), the split caps, and what the built-in registry changes.

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

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
}

// The registry's CPU_FLASH (what `attnrt run`, the Python module and embedders get) differs from
// the defaults in one documented way: f32 products for bf16 caches, so that `run --check` agrees
// with the dense recomputation token for token.
TEST(CpuFlashOptionsTest, TheRegistryBackendDiffersFromTheDefaultsOnlyInBf16DotProducts) {
  const auto* flash =
      dynamic_cast<const CpuFlashBackend*>(builtin_backends().get("CPU_FLASH").get());
  ASSERT_NE(flash, nullptr);
  const CpuFlashOptions defaults;
  const CpuFlashOptions& used = flash->options();
  EXPECT_EQ(used.num_threads, defaults.num_threads);
  EXPECT_EQ(used.min_split_keys, defaults.min_split_keys);
  EXPECT_EQ(used.max_splits, defaults.max_splits);
  EXPECT_EQ(used.partial_bytes, defaults.partial_bytes);
  EXPECT_TRUE(defaults.bf16_dot_products);
  EXPECT_FALSE(used.bf16_dot_products);
}

}  // namespace
}  // namespace attnrt
