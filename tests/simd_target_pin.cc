// ATTNRT_TEST_SIMD_TARGET=<name> pins CPU_FLASH's SIMD dispatch for a whole test binary, so that
// scripts/test-simd-targets.sh can force every compiled target through the kernel property tests
// (a release build compiles several and would otherwise test only the best this CPU runs).
// ATTNRT_TEST_SIMD_TARGET=list prints the targets this build compiled and this CPU runs, one per
// line, and exits before any test.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "attnrt/core/error.h"
#include "backends/cpu_flash/simd_targets.h"

namespace attnrt {
namespace {

class PinnedSimdTarget : public testing::Environment {
 public:
  explicit PinnedSimdTarget(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    if (name_ == "list") {
      for (const std::string& target : cpu_flash_simd_targets())
        std::printf("%s\n", target.c_str());
      std::fflush(stdout);
      std::_Exit(0);
    }
    try {
      pinned_ = std::make_unique<ScopedSimdTarget>(name_);
    } catch (const Error& error) {
      std::fprintf(stderr, "ATTNRT_TEST_SIMD_TARGET: %s\n", error.what());
      std::_Exit(2);
    }
    std::printf("CPU_FLASH pinned to the %s target (ATTNRT_TEST_SIMD_TARGET)\n", name_.c_str());
  }
  void TearDown() override { pinned_.reset(); }

 private:
  std::string name_;
  std::unique_ptr<ScopedSimdTarget> pinned_;
};

// Registered before main() runs; gtest owns the environment and sets it up in RUN_ALL_TESTS,
// after every static object (Highway's dispatch tables among them) is constructed.
const bool kRegistered = [] {
  const char* name = std::getenv("ATTNRT_TEST_SIMD_TARGET");
  if (name != nullptr && *name != '\0')
    testing::AddGlobalTestEnvironment(new PinnedSimdTarget(name));
  return true;
}();

}  // namespace
}  // namespace attnrt
