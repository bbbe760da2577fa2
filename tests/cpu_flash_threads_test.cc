// CpuFlashBackend's default thread count: OMP_NUM_THREADS, else every processor; never the
// OpenMP default a host library may have lowered (PyTorch sets it to its physical-core count).

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <optional>
#include <string>

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

TEST(CpuFlashThreadsTest, DefaultIgnoresALoweredOpenMPDefault) {
  const ScopedThreadsVariable unset(nullptr);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);  // what `import torch` does on a machine it counts one core on
  EXPECT_EQ(CpuFlashBackend().num_threads(), omp_get_num_procs());
  omp_set_num_threads(before);
}

TEST(CpuFlashThreadsTest, OmpNumThreadsAndExplicitCountsWin) {
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

}  // namespace
}  // namespace attnrt
