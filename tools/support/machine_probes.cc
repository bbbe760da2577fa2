// The machine probes (machine_probes.h), per SIMD target like the kernels they are compared with.
// Only `attnrt bench`, bench/ and the tests use them, so they build outside the library. Highway's
// dispatch is process-wide (libhwy): they run the target CPU_FLASH runs, ScopedSimdTarget's too.

#include "support/machine_probes.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "attnrt/core/buffer.h"
#include "core/fail.h"

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "support/machine_probes.cc"  // from tools/, attnrt_support's include path
#include "backends/cpu_flash/flash_targets.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace attnrt::cpu_flash::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of `count` floats: four independent accumulators keep the loads, not the adds, the limit.
float SumFloats(const float* HWY_RESTRICT data, std::size_t count) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  auto a = hn::Zero(df), b = hn::Zero(df), c = hn::Zero(df), d = hn::Zero(df);
  std::size_t i = 0;
  for (; i + 4 * lanes <= count; i += 4 * lanes) {
    a = hn::Add(a, hn::Load(df, data + i));
    b = hn::Add(b, hn::Load(df, data + i + lanes));
    c = hn::Add(c, hn::Load(df, data + i + 2 * lanes));
    d = hn::Add(d, hn::Load(df, data + i + 3 * lanes));
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a, b), hn::Add(c, d))));
  for (; i < count; ++i) sum += data[i];
  return sum;
}

// Sum of the floats of `pages` (page indices into `base`) read in `order` (machine_probes.h);
// record_bytes is a multiple of 64, so whole vectors cover a record. Each record's vector loads
// feed two accumulators, so the loads, not the adds, are the limit.
float SumPagedWalk(const std::byte* HWY_RESTRICT base, const std::uint32_t* pages,
                   std::size_t num_pages, const PagedReadOrder& order) {
  const hn::ScalableTag<float> df;
  const std::size_t lanes = hn::Lanes(df);
  const std::size_t row_bytes = static_cast<std::size_t>(order.record_bytes) *
                                static_cast<std::size_t>(order.records_per_row);
  const std::size_t page_bytes = row_bytes * static_cast<std::size_t>(order.rows_per_page);
  const std::size_t record_floats = static_cast<std::size_t>(order.record_bytes) / sizeof(float);
  const auto ways = static_cast<std::size_t>(order.ways);
  auto a = hn::Zero(df), b = hn::Zero(df);
  for (std::size_t first = 0; first + ways <= num_pages; first += ways) {
    for (int row = 0; row < order.rows_per_page; ++row) {
      for (int record = 0; record < order.records_per_row; ++record) {
        const std::size_t offset = static_cast<std::size_t>(row) * row_bytes +
                                   static_cast<std::size_t>(record) * order.record_bytes;
        for (std::size_t w = 0; w < ways; ++w) {
          const auto* data =
              reinterpret_cast<const float*>(base + pages[first + w] * page_bytes + offset);
          std::size_t i = 0;
          for (; i + 2 * lanes <= record_floats; i += 2 * lanes) {
            a = hn::Add(a, hn::Load(df, data + i));
            b = hn::Add(b, hn::Load(df, data + i + lanes));
          }
          for (; i < record_floats; i += lanes) a = hn::Add(a, hn::Load(df, data + i));
        }
      }
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(a, b)));
}

// `iterations` rounds of 12 independent FMA chains (enough to cover FMA latency × throughput on
// current cores); returns the FLOPs done. `seed` keeps the compiler from folding the chains.
double FmaChains(float seed, std::int64_t iterations, float* sink) {
  const hn::ScalableTag<float> df;
  constexpr int kChains = 12;
  hn::Vec<decltype(df)> acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = hn::Set(df, seed + static_cast<float>(k));
  const auto mul = hn::Set(df, 0.999999f + seed * 1e-9f);
  const auto add = hn::Set(df, 1e-7f);
  for (std::int64_t n = 0; n < iterations; ++n) {
    for (int k = 0; k < kChains; ++k) acc[k] = hn::MulAdd(acc[k], mul, add);
  }
  auto total = acc[0];
  for (int k = 1; k < kChains; ++k) total = hn::Add(total, acc[k]);
  *sink = hn::GetLane(total);
  return 2.0 * static_cast<double>(hn::Lanes(df)) * kChains * static_cast<double>(iterations);
}

}  // namespace attnrt::cpu_flash::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnrt {
namespace cpu_flash {

HWY_EXPORT(SumFloats);
HWY_EXPORT(SumPagedWalk);
HWY_EXPORT(FmaChains);

float sum_floats(const float* data, std::size_t count) {
  return HWY_DYNAMIC_DISPATCH(SumFloats)(data, count);
}

float sum_paged_walk(const std::byte* base, const std::uint32_t* pages, std::size_t num_pages,
                     const PagedReadOrder& order) {
  return HWY_DYNAMIC_DISPATCH(SumPagedWalk)(base, pages, num_pages, order);
}

double fma_chains(float seed, std::int64_t iterations, float* sink) {
  return HWY_DYNAMIC_DISPATCH(FmaChains)(seed, iterations, sink);
}

}  // namespace cpu_flash
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The best of `repeats` (at least one) calls of `rate`.
template <class Rate>
double best_of(int repeats, const Rate& rate) {
  double best = 0.0;
  for (int r = 0; r < std::max(1, repeats); ++r) best = std::max(best, rate());
  return best;
}

// The best of `repeats` passes in which each of `num_threads` threads returns thread_sum(its
// index), a sum over the bytes it read; GB/s of `bytes` read per pass in all.
template <class ThreadSum>
double best_read_rate(int repeats, int num_threads, std::size_t bytes,
                      const ThreadSum& thread_sum) {
  volatile float sink = 0.f;
  return best_of(repeats, [&] {
    float sum = 0.f;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(num_threads) reduction(+ : sum)
    sum += thread_sum(static_cast<std::size_t>(omp_get_thread_num()));
    const double seconds = seconds_since(start);
    sink = sink + sum;
    return static_cast<double>(bytes) / seconds / 1e9;
  });
}

}  // namespace

DramReadProbe::DramReadProbe(std::size_t bytes) : buffer_(Buffer::allocate(bytes)) {}

double DramReadProbe::measure(int num_threads, int repeats) const {
  num_threads = std::max(1, num_threads);
  const auto* data = reinterpret_cast<const float*>(buffer_->data());
  const std::size_t count = buffer_->size() / sizeof(float);
  const std::size_t per_thread = count / static_cast<std::size_t>(num_threads) / 64 * 64;
  return best_read_rate(repeats, num_threads, per_thread * num_threads * sizeof(float),
                        [&](std::size_t thread) {
                          return cpu_flash::sum_floats(data + thread * per_thread, per_thread);
                        });
}

double DramReadProbe::measure_paged(const PagedReadOrder& order, int num_threads,
                                    int repeats) const {
  num_threads = std::max(1, num_threads);
  if (order.record_bytes <= 0 || order.record_bytes % 64 != 0) {
    fail("paged read order: record_bytes {} is not a positive multiple of 64 (a cache line)",
         order.record_bytes);
  }
  if (order.records_per_row < 1 || order.rows_per_page < 1 || order.ways < 1) {
    fail("paged read order: records_per_row {}, rows_per_page {} and ways {} must be at least 1",
         order.records_per_row, order.rows_per_page, order.ways);
  }
  const std::size_t page_bytes = static_cast<std::size_t>(order.record_bytes) *
                                 static_cast<std::size_t>(order.records_per_row) *
                                 static_cast<std::size_t>(order.rows_per_page);
  const std::size_t pages_per_thread =
      buffer_->size() / page_bytes / static_cast<std::size_t>(num_threads);
  if (pages_per_thread < static_cast<std::size_t>(order.ways)) {
    fail(
        "paged read order: {} pages of {} bytes in lockstep do not fit in a {}-byte probe buffer "
        "shared by {} threads",
        order.ways, page_bytes, buffer_->size(), num_threads);
  }
  // Each thread its own pages, shuffled once: a real cache's blocks are scattered too.
  std::vector<std::uint32_t> pages(pages_per_thread * static_cast<std::size_t>(num_threads));
  std::mt19937 shuffle(7);
  for (std::size_t t = 0; t < static_cast<std::size_t>(num_threads); ++t) {
    const auto part = pages.begin() + static_cast<std::ptrdiff_t>(t * pages_per_thread);
    std::iota(part, part + static_cast<std::ptrdiff_t>(pages_per_thread),
              static_cast<std::uint32_t>(t * pages_per_thread));
    std::shuffle(part, part + static_cast<std::ptrdiff_t>(pages_per_thread), shuffle);
  }
  const std::size_t walked = pages_per_thread / static_cast<std::size_t>(order.ways) *
                             static_cast<std::size_t>(order.ways) * page_bytes;
  return best_read_rate(repeats, num_threads, walked * static_cast<std::size_t>(num_threads),
                        [&](std::size_t thread) {
                          return cpu_flash::sum_paged_walk(buffer_->data(),
                                                           pages.data() + thread * pages_per_thread,
                                                           pages_per_thread, order);
                        });
}

double measure_fma_peak_gflops(int num_threads, int repeats) {
  num_threads = std::max(1, num_threads);
  constexpr std::int64_t kIterations = 20'000'000;
  volatile float sink = 0.f;
  return best_of(repeats, [&] {
    double flops = 0.0;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(num_threads) reduction(+ : flops)
    {
      float local = 0.f;
      flops += cpu_flash::fma_chains(static_cast<float>(omp_get_thread_num()) * 1e-3f, kIterations,
                                     &local);
      sink = local;
    }
    return flops / seconds_since(start) / 1e9;
  });
}

}  // namespace attnrt
#endif  // HWY_ONCE
