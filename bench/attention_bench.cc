// CPU_FLASH decode and prefill under Google Benchmark, on the same cases and fixture as
// `attnrt bench attention` (which also reports them against the machine's limits). Decode reads
// at least 256 MiB of paged KV per iteration (rotating layers) and reports bytes_per_second of
// effective KV read; prefill reports causal FLOP/s (4·q·k·d per head, halved). Threads: all
// hardware threads; ATTNRT_BENCH_THREADS overrides. ATTNRT_BENCH_HOT=1 decodes on one layer's cache
// that stays warm, as `attnrt bench attention --hot` does: the kernel's speed without DRAM.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "bench/bench_attention_cases.h"
#include "support/machine_probes.h"

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

// ATTNRT_BENCH_BF16_PRODUCTS=dot|f32 times one choice for bf16 caches; unset or `auto`, the CPU's
// features choose, as the engine's do. Anything else stops the benchmark.
attnrt::Bf16Products bench_bf16_products() {
  const char* text = std::getenv("ATTNRT_BENCH_BF16_PRODUCTS");
  const std::string choice = text != nullptr ? text : "auto";
  if (const auto products = attnrt::bf16_products_from_name(choice)) return *products;
  std::fprintf(stderr, "ATTNRT_BENCH_BF16_PRODUCTS: '%s' is not auto, dot or f32\n",
               choice.c_str());
  std::exit(2);
}

// ATTNRT_BENCH_STREAM_PREFETCH=on|off forces the GQA decode's next-step prefetch; unset or
// `auto`, the CPU decides, as the engine's does. Anything else stops the benchmark.
std::optional<bool> bench_stream_prefetch() {
  const char* text = std::getenv("ATTNRT_BENCH_STREAM_PREFETCH");
  const std::string choice = text != nullptr ? text : "auto";
  if (choice == "on") return true;
  if (choice == "off") return false;
  if (choice == "auto") return std::nullopt;
  std::fprintf(stderr, "ATTNRT_BENCH_STREAM_PREFETCH: '%s' is not on, off or auto\n",
               choice.c_str());
  std::exit(2);
}

const CpuFlashBackend& flash() {
  static const CpuFlashBackend backend(CpuFlashOptions{.num_threads = bench_threads(),
                                                       .bf16_products = bench_bf16_products(),
                                                       .stream_prefetch = bench_stream_prefetch()});
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

// Args: tokens, head size, dtype (0 bf16, 1 f16); 32 query / 8 KV heads, causal.
void BM_FlashPrefill(benchmark::State& state) {
  run_case(state, {BenchKind::prefill, 1, static_cast<int>(state.range(0)),
                   static_cast<int>(state.range(1)), 32, 8,
                   state.range(2) == 0 ? DType::bf16 : DType::f16});
}
BENCHMARK(BM_FlashPrefill)
    ->ArgNames({"tokens", "head", "f16"})
    ->ArgsProduct({{512, 2048, 4096}, {128, 256}, {0, 1}})
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

// How the order of a decode's reads alone sets its DRAM rate: DramReadProbe::measure_paged
// over pages of 16 token rows × 8 KV heads × [K | V] (bf16, head 128: 512 B per head, 4 KiB per
// row, 64 KiB per page) in shuffled order, `pages` of them walked in lockstep, one token row of
// each a step, as the stream kernels read them. Compare with BM_DramReadProbe side by side.
void BM_PagedReadPattern(benchmark::State& state) {
  constexpr std::size_t kBytes = std::size_t{512} << 20;
  const attnrt::DramReadProbe probe(kBytes);
  const attnrt::PagedReadOrder order{.record_bytes = 512,
                                     .records_per_row = 8,
                                     .rows_per_page = 16,
                                     .ways = static_cast<int>(state.range(0))};
  probe.measure_paged(order, bench_threads(), 1);  // first touch
  double gbps = 0.0;
  for (auto _ : state) gbps = probe.measure_paged(order, bench_threads(), 1);
  state.SetBytesProcessed(static_cast<std::int64_t>(kBytes) * state.iterations());
  state.counters["last_GBps"] = gbps;
  state.counters["threads"] = bench_threads();
}
BENCHMARK(BM_PagedReadPattern)
    ->ArgName("pages")
    ->Arg(1)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
