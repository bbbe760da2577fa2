// Steady-state steps allocate no heap memory: this binary replaces the global operator new and
// delete with counting versions and runs the whole per-step host path (StepWorkload: block ids,
// input batch, dispatch, slot mappings, fast-prefill staging, attention metadata) many times.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "bench/step_workload.h"

namespace {

std::atomic<long> num_allocations{0};

void* counted_allocation(std::size_t size, std::size_t alignment) {
  num_allocations.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  void* memory = alignment > alignof(std::max_align_t)
                     ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
                     : std::malloc(size);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
}

}  // namespace

// Every form of new and delete, the nothrow ones included (std::stable_sort's temporary buffer
// uses them), so that all of them meet the same allocator.
void* operator new(std::size_t size) {
  return counted_allocation(size, 0);
}
void* operator new[](std::size_t size) {
  return counted_allocation(size, 0);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  return counted_allocation(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return operator new(size, alignment);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_allocation(size, 0);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  try {
    return counted_allocation(size, static_cast<std::size_t>(alignment));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t alignment,
                     const std::nothrow_t& tag) noexcept {
  return operator new(size, alignment, tag);
}
// gcc 12 at -O1 sees gtest's `new TestClass` meet this `free` once inlined and calls it a
// mismatch; both are this file's replacements, which allocate with malloc.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete[](void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}

namespace attnrt {
namespace {

using bench::StepKind;
using bench::StepWorkload;

long allocations_during(auto&& action) {
  const long before = num_allocations.load();
  action();
  return num_allocations.load() - before;
}

TEST(StepAllocationTest, TheCounterSeesAllocations) {
  EXPECT_GE(allocations_during([] { std::vector<int> values(100); }), 1);
}

TEST(StepAllocationTest, SteadyStepsAllocateNothing) {
  for (StepKind kind : {StepKind::decode, StepKind::mixed}) {
    for (int num_reqs : {1, 32, 256}) {
      SCOPED_TRACE(testing::Message() << bench::step_kind_name(kind) << " " << num_reqs);
      StepWorkload workload(num_reqs, kind);
      for (int i = 0; i < 8; ++i) workload.step();  // warm-up
      // 100 steps cross block boundaries (every 16 decode steps) and restart prefills.
      EXPECT_EQ(allocations_during([&] {
                  for (int i = 0; i < 100; ++i) workload.step();
                }),
                0);
      EXPECT_EQ(workload.batch().num_reqs(), num_reqs);
      if (kind == StepKind::mixed) {
        EXPECT_TRUE(workload.fast_prefill().has_value());
      } else {
        EXPECT_EQ(workload.descriptor().cg_mode, CUDAGraphMode::FULL);
      }
    }
  }
}

}  // namespace
}  // namespace attnrt
