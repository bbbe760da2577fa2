// Soak test of the Engine (label `soak`, excluded from the default test presets): the built-in
// tiny-yoco model (embedded default config: CPU_FLASH, emulated FULL_AND_PIECEWISE graphs,
// KV-sharing fast prefill) on a KV pool of 32 blocks, under random arrivals, random prompt and
// output lengths and random cancellations (engine_soak_driver.h), for 20 000 steps plus the
// drain. After every step: engine_soak_checks.h (block ownership, block-table rows, slot
// mappings). At the end: every request finished or was aborted, every block is free, the heap
// outside the engine's per-request records did not grow after warm-up, and a sample of finished
// requests (those preempted first, up to 24, and every 16th other one, up to 24) generated the
// dense reference's greedy tokens. A second, shorter run records logits and passes
// check_against_dense whole.

#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <vector>

#include "soak/engine_soak_driver.h"
#include "soak/heap_counter.h"
#include "support/dense_reference.h"
#include "support/engine_workload.h"

namespace attnrt {
namespace {

using soak::EngineSoakDriver;
using soak::expect_drained;
using soak::run_soak;
using soak::SoakSettings;

std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size_pages = 0;
  std::int64_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * sysconf(_SC_PAGESIZE);
}

struct TokenCheck {
  int requests = 0;
  int preempted = 0;
  std::int64_t tokens = 0;
  std::int64_t exact = 0;  // the dense argmax itself (the rest are near-ties within tolerance)
};

// Each generated token must be a greedy choice of the dense logits at its position: within the
// tolerance of their maximum (the engine's logits were not recorded, so near-ties may differ).
void check_tokens_densely(const Engine& engine, const RequestRecord& record, TokenCheck& check) {
  const double tolerance = dense_check_tolerance(engine);
  std::vector<std::int32_t> tokens(record.prompt);
  tokens.insert(tokens.end(), record.output.begin(), record.output.end() - 1);
  const DenseResult dense = dense_forward(engine.model(), tokens);
  for (std::size_t k = 0; k < record.output.size(); ++k) {
    const std::span<const float> row = dense.row(static_cast<int>(record.prompt.size() + k) - 1);
    const float best = *std::ranges::max_element(row);
    const float chosen = row[static_cast<std::size_t>(record.output[k])];
    EXPECT_GE(chosen, best - 2 * tolerance) << "request " << record.id << " token " << k;
    check.exact += greedy_token(row) == record.output[k] ? 1 : 0;
    check.tokens += 1;
  }
}

TokenCheck check_sample_densely(const EngineSoakDriver& driver) {
  constexpr int kPerKind = 24;
  constexpr int kEveryOther = 16;
  TokenCheck check;
  int others = 0;
  for (const RequestRecord& record : driver.engine().requests()) {
    if (!record.finished) continue;
    const bool preempted = driver.was_preempted(record.id);
    const bool wanted =
        preempted ? check.preempted < kPerKind : others < kPerKind && record.id % kEveryOther == 0;
    if (!wanted) continue;
    (preempted ? check.preempted : others) += 1;
    check.requests += 1;
    check_tokens_densely(driver.engine(), record, check);
  }
  return check;
}

// CPU_FLASH takes its thread count from OpenMP when the built-in registry is first built (the
// first Engine). One thread: on a shared 2-core machine the idle worker spins at every barrier,
// and 2 000 soak steps took 235 s with two threads against 15 s with one. The kernels are the
// same; key splits need 256 keys, more than any soak sequence holds.
void use_one_openmp_thread() {
  omp_set_num_threads(1);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Heap and RSS outside the engine's per-request records (Engine::requests() keeps every record
// for the whole run by design, so their bytes are subtracted as they are counted).
struct MemorySamples {
  std::int64_t rss_start = 0;
  std::int64_t rss_warm = 0;
  std::int64_t rss_end = 0;
  std::int64_t heap_start = 0;        // the engine built, before the first step
  std::int64_t heap_warm = 0;         // at the end of warm-up
  std::int64_t heap_end = 0;          // after the drain
  std::int64_t peak_first_half = 0;   // steps warm-up .. steps/2
  std::int64_t peak_second_half = 0;  // steps/2 .. steps

  void after_step(const EngineSoakDriver& driver, const SoakSettings& settings, int step) {
    const std::int64_t heap = soak::live_heap_bytes() - driver.record_bytes();
    if (step + 1 == settings.warmup_steps) {
      heap_warm = heap;
      rss_warm = resident_bytes() - driver.record_bytes();
    }
    if (step >= settings.steps / 2) {
      peak_second_half = std::max(peak_second_half, heap);
    } else if (step >= settings.warmup_steps) {
      peak_first_half = std::max(peak_first_half, heap);
    }
  }
  void at_end(const EngineSoakDriver& driver) {
    heap_end = soak::live_heap_bytes() - driver.record_bytes();
    rss_end = resident_bytes() - driver.record_bytes();
  }
};

// The soak met what it is for: preemptions, cancellations, both graph modes, fast prefill,
// window releases, padding, and rows of requests finishing in their step.
void expect_coverage(const EngineSoakDriver& driver) {
  const Engine& engine = driver.engine();
  EXPECT_GT(driver.num_added(), 3'000);
  EXPECT_GT(engine.stats().preemptions, 500);  // the pool was small enough to matter
  EXPECT_GT(engine.num_aborted(), 300);
  EXPECT_GT(engine.stats().steps_in(CUDAGraphMode::FULL), 1'000);
  EXPECT_GT(engine.stats().steps_in(CUDAGraphMode::PIECEWISE), 1'000);
  EXPECT_GT(engine.stats().fast_prefill_rows_skipped, 0);
  EXPECT_GT(driver.coverage().released_columns, 0);
  EXPECT_GT(driver.coverage().padding_slots, 0);
  EXPECT_GT(driver.coverage().finished_rows, 1'000);
}

void expect_no_growth(const MemorySamples& memory) {
  // Recycled requests may meet a longer request than before and the waiting deque may take a
  // chunk: hundreds of bytes. One leaked allocation per step or request would be ~100 KiB.
  EXPECT_GT(memory.peak_first_half, 0);
  EXPECT_LE(memory.peak_second_half, memory.peak_first_half + 16'384) << "the heap grew";
  EXPECT_LE(memory.heap_end, memory.heap_warm + 16'384) << "the heap grew after warm-up";
  // RSS is coarser (pages, allocator caches, freed record arrays): at most 4 MiB more.
  EXPECT_LE(memory.rss_end, memory.rss_warm + (4 << 20)) << "resident memory grew";
}

void print_report(const EngineSoakDriver& driver, const MemorySamples& memory, double seconds,
                  const TokenCheck& dense, double dense_seconds) {
  const Engine& engine = driver.engine();
  const EngineStats& stats = engine.stats();
  const auto& coverage = driver.coverage();
  const auto n = [](std::int64_t value) { return static_cast<long long>(value); };
  std::printf(
      "engine soak: %lld steps (FULL %lld, PIECEWISE %lld), %lld requests, %d finished, %d "
      "aborted, %lld preemptions, %.1f s\n"
      "  checked %lld slots, %lld padding slots, %lld released window columns, %lld rows of "
      "requests finished in their step\n"
      "  heap outside records: %lld B at start, %lld B warm, %lld B end (peaks %lld / %lld); "
      "records %lld B\n"
      "  RSS outside records: %lld KiB at start, %lld KiB warm, %lld KiB end\n"
      "  dense sample: %d requests (%d preempted first), %lld tokens, %lld exact argmax, %.1f s\n",
      n(stats.steps), n(stats.steps_in(CUDAGraphMode::FULL)),
      n(stats.steps_in(CUDAGraphMode::PIECEWISE)), n(driver.num_added()), engine.num_finished(),
      engine.num_aborted(), n(stats.preemptions), seconds, n(coverage.slots),
      n(coverage.padding_slots), n(coverage.released_columns), n(coverage.finished_rows),
      n(memory.heap_start), n(memory.heap_warm), n(memory.heap_end), n(memory.peak_first_half),
      n(memory.peak_second_half), n(driver.record_bytes()), n(memory.rss_start >> 10),
      n(memory.rss_warm >> 10), n(memory.rss_end >> 10), dense.requests, dense.preempted,
      n(dense.tokens), n(dense.exact), dense_seconds);
}

TEST(EngineSoakTest, RandomTrafficAndCancellationsKeepBlocksTablesAndSlotsConsistent) {
  const SoakSettings settings{.steps = 20'000,
                              .drain_steps = 4'000,
                              .warmup_steps = 2'000,
                              .arrival_percent = 20,
                              .abort_per_mille = 30,
                              .max_outstanding = 24,
                              .record_logits = false,
                              .seed = 20240611};
  use_one_openmp_thread();
  const auto start = std::chrono::steady_clock::now();
  EngineSoakDriver driver(settings);
  MemorySamples memory;
  memory.rss_start = resident_bytes();
  memory.heap_start = soak::live_heap_bytes();
  run_soak(driver, settings, [&](int step) { memory.after_step(driver, settings, step); });
  if (::testing::Test::HasFatalFailure()) return;
  const double seconds = seconds_since(start);
  memory.at_end(driver);
  expect_drained(driver);
  expect_coverage(driver);
  expect_no_growth(memory);

  const auto dense_start = std::chrono::steady_clock::now();
  const TokenCheck dense = check_sample_densely(driver);
  EXPECT_GE(dense.preempted, 10);
  EXPECT_GE(dense.requests, 30);
  print_report(driver, memory, seconds, dense, seconds_since(dense_start));
}

// The same traffic, shorter, with every logits row kept: every token of every request (aborted
// ones up to their cancellation) against the dense recomputation, as `attnrt run --check`.
TEST(EngineSoakTest, RandomTrafficAndCancellationsMatchTheDenseReference) {
  const SoakSettings settings{.steps = 1'500,
                              .drain_steps = 1'000,
                              .warmup_steps = 0,
                              .arrival_percent = 20,
                              .abort_per_mille = 30,
                              .max_outstanding = 24,
                              .record_logits = true,
                              .seed = 7};
  use_one_openmp_thread();
  const auto start = std::chrono::steady_clock::now();
  EngineSoakDriver driver(settings);
  run_soak(driver, settings, [](int) {});
  if (::testing::Test::HasFatalFailure()) return;
  const double run_seconds = seconds_since(start);
  expect_drained(driver);
  const Engine& engine = driver.engine();
  EXPECT_GT(engine.stats().preemptions, 10);
  EXPECT_GT(engine.num_aborted(), 10);
  // The tolerance of `attnrt run --check`; near-ties may order either way within it.
  const double tolerance = dense_check_tolerance(engine);
  const DenseCheck check = check_against_dense(engine, 2 * tolerance);
  EXPECT_LE(check.max_abs_logit_diff, tolerance);
  EXPECT_EQ(check.tokens_agree + check.near_ties, check.tokens_total);
  EXPECT_GT(check.tokens_total, 1'000);
  std::printf(
      "engine soak (dense): %lld requests, %d finished, %d aborted, %lld preemptions, %lld "
      "tokens checked, %lld agree, max |logit diff| %.2e; run %.1f s, check %.1f s\n",
      static_cast<long long>(driver.num_added()), engine.num_finished(), engine.num_aborted(),
      static_cast<long long>(engine.stats().preemptions),
      static_cast<long long>(check.tokens_total), static_cast<long long>(check.tokens_agree),
      check.max_abs_logit_diff, run_seconds, seconds_since(start) - run_seconds);
}

}  // namespace
}  // namespace attnrt
