// CPU_FLASH decode and prefill under Google Benchmark, on the same cases and fixture as
// `attnrt bench attention` (which also reports them against the machine's limits). Decode reads
// at least 256 MiB of paged KV per iteration (rotating layers) and reports bytes_per_second of
// effective KV read; prefill reports causal FLOP/s (4·q·k·d per head, halved). Threads: all
// hardware threads; ATTNRT_BENCH_THREADS overrides. ATTNRT_BENCH_HOT=1 decodes on one layer's cache
// that stays warm, as `attnrt bench attention --hot` does: the kernel's speed without DRAM.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "../tools/attnrt/bench_attention_cases.h"
#include "attnrt/backends/cpu_flash/machine_probes.h"
#include "attnrt/core/buffer.h"

namespace {

using attnrt::CpuFlashBackend;
using attnrt::CpuFlashOptions;
using attnrt::DType;
using attnrt::cli::AttentionBenchCase;
using attnrt::cli::AttentionBenchFixture;
using attnrt::cli::BenchKind;
using attnrt::cli::KVArena;

int bench_threads() {
  if (const char* text = std::getenv("ATTNRT_BENCH_THREADS")) return std::max(1, std::atoi(text));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

bool bench_hot() {
  const char* text = std::getenv("ATTNRT_BENCH_HOT");
  return text != nullptr && std::atoi(text) != 0;
}

const CpuFlashBackend& flash() {
  static const CpuFlashBackend backend(CpuFlashOptions{.num_threads = bench_threads()});
  return backend;
}

void run_case(benchmark::State& state, const AttentionBenchCase& bench_case) {
  const KVArena arena(bench_case.kv_dtype, attnrt::cli::arena_bytes(bench_case, bench_hot()));
  AttentionBenchFixture fixture(bench_case, arena, bench_hot(), flash());
  fixture.run();  // warm-up: first touch, workspace
  for (auto _ : state) fixture.run();
  const double work = fixture.work_per_iteration() * static_cast<double>(state.iterations());
  if (bench_case.kind == BenchKind::decode) {
    state.SetBytesProcessed(static_cast<std::int64_t>(work));
    state.counters["layers"] = fixture.layers();
  } else {
    state.counters["FLOP/s"] = benchmark::Counter(work, benchmark::Counter::kIsRate);
  }
  state.counters["threads"] = bench_threads();
}

// Args: batch, context, query heads (8 KV heads, head 128), dtype (0 bf16, 1 f16).
void BM_FlashDecode(benchmark::State& state) {
  run_case(state, {BenchKind::decode, static_cast<int>(state.range(0)),
                   static_cast<int>(state.range(1)), 128, static_cast<int>(state.range(2)), 8,
                   state.range(3) == 0 ? DType::bf16 : DType::f16});
}
BENCHMARK(BM_FlashDecode)
    ->ArgNames({"batch", "context", "q_heads", "f16"})
    ->ArgsProduct({{1, 8, 32}, {512, 4096, 16384}, {8, 32}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: tokens, head size (32 query / 8 KV heads, bf16 cache, causal).
void BM_FlashPrefill(benchmark::State& state) {
  run_case(state, {BenchKind::prefill, 1, static_cast<int>(state.range(0)),
                   static_cast<int>(state.range(1)), 32, 8, DType::bf16});
}
BENCHMARK(BM_FlashPrefill)
    ->ArgNames({"tokens", "head"})
    ->ArgsProduct({{512, 2048, 4096}, {128, 256}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The DRAM read probe `attnrt bench attention` compares decode with, at the same thread count,
// so that a filter can time the limit and a case side by side (bytes_per_second).
void BM_DramReadProbe(benchmark::State& state) {
  constexpr std::size_t kBytes = std::size_t{512} << 20;
  const attnrt::DramReadProbe probe(kBytes);
  probe.measure(bench_threads(), 1);  // first touch
  double gbps = 0.0;
  for (auto _ : state) gbps = probe.measure(bench_threads(), 1);
  state.SetBytesProcessed(static_cast<std::int64_t>(kBytes) * state.iterations());
  state.counters["last_GBps"] = gbps;
  state.counters["threads"] = bench_threads();
}
BENCHMARK(BM_DramReadProbe)->Unit(benchmark::kMillisecond)->UseRealTime();

// How the order of a decode's reads alone sets its DRAM rate: no compute, only the loads of a
// paged KV walk. Pages of 16 token rows × 8 KV heads × [K | V] (bf16, head 128: 512 B per head,
// 4 KiB per row, 64 KiB per page) in shuffled order; `pages` of them are walked in lockstep,
// `rows` token rows of each a step, and per step and head the K lines of every listed row, then
// their V lines, as the stream kernels read them. Compare with BM_DramReadProbe side by side.
constexpr std::size_t kPatternHeadBytes = 512;
constexpr std::size_t kPatternRowBytes = 8 * kPatternHeadBytes;
constexpr std::size_t kPatternPageBytes = 16 * kPatternRowBytes;

// Sums every 8-byte word of [p, p + bytes): all of each cache line is loaded, as a kernel does.
std::uint64_t sum_lines(const std::byte* p, std::size_t bytes) {
  const auto* words = reinterpret_cast<const std::uint64_t*>(p);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < bytes / sizeof(std::uint64_t); ++i) sum += words[i];
  return sum;
}

std::uint64_t walk_pages(const std::byte* base, const std::vector<std::uint32_t>& pages,
                         int lockstep, int rows) {
  std::uint64_t sum = 0;
  std::vector<const std::byte*> records(static_cast<std::size_t>(lockstep * rows));
  for (std::size_t first = 0; first + lockstep <= pages.size(); first += lockstep) {
    for (int row = 0; row < 16; row += rows) {
      for (int r = 0; r < rows; ++r) {
        for (int i = 0; i < lockstep; ++i) {
          records[r * lockstep + i] =
              base + pages[first + i] * kPatternPageBytes + (row + r) * kPatternRowBytes;
        }
      }
      for (int head = 0; head < 8; ++head) {
        const std::size_t k = head * kPatternHeadBytes;
        for (const std::byte* record : records) sum += sum_lines(record + k, 256);
        for (const std::byte* record : records) sum += sum_lines(record + k + 256, 256);
      }
    }
  }
  return sum;
}

// Args: pages walked in lockstep, token rows of each per step.
void BM_PagedReadPattern(benchmark::State& state) {
  constexpr std::size_t kBytes = std::size_t{512} << 20;
  const int lockstep = static_cast<int>(state.range(0));
  const int rows = static_cast<int>(state.range(1));
  const auto buffer = attnrt::Buffer::allocate(kBytes);
  const int threads = bench_threads();
  // Each thread walks its own shuffled pages, as decode threads walk their own requests.
  const std::size_t pages_per_thread = kBytes / kPatternPageBytes / threads;
  std::vector<std::vector<std::uint32_t>> pages(threads);
  std::mt19937 shuffle(7);
  for (int t = 0; t < threads; ++t) {
    pages[t].resize(pages_per_thread);
    std::iota(pages[t].begin(), pages[t].end(), static_cast<std::uint32_t>(t * pages_per_thread));
    std::shuffle(pages[t].begin(), pages[t].end(), shuffle);
  }
  std::vector<std::uint64_t> sums(threads);
  const auto pass = [&] {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back(
          [&, t] { sums[t] = walk_pages(buffer->data(), pages[t], lockstep, rows); });
    }
    for (auto& worker : workers) worker.join();
  };
  pass();  // first touch
  for (auto _ : state) {
    pass();
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(pages_per_thread * threads * kPatternPageBytes) *
      state.iterations());
  state.counters["threads"] = threads;
}
BENCHMARK(BM_PagedReadPattern)
    ->ArgNames({"pages", "rows"})
    ->Args({4, 1})
    ->Args({8, 1})
    ->Args({16, 1})
    ->Args({4, 2})
    ->Args({8, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
