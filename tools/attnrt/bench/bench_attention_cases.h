#pragma once
// Measuring one `attnrt bench attention` case: KV caches carved from a shared arena of random
// values, paged through shuffled block tables, and timed with CPU_FLASH (median of repeated
// iterations after a warm-up) and with CPU_REFERENCE on a slice of the case.

#include <cstddef>
#include <memory>
#include <vector>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/core/buffer.h"
#include "bench/bench_attention.h"
#include "support/machine_probes.h"

namespace attnrt::cli {

// A buffer of random finite K/V values in [-1, 1] of one dtype, shared by the cases of that
// dtype (filling gigabytes once, not per case).
class KVArena {
 public:
  KVArena(DType dtype, std::size_t bytes);
  DType dtype() const { return dtype_; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

 private:
  DType dtype_;
  std::shared_ptr<Buffer> buffer_;
};

// Decode reads at least this much KV per iteration unless hot, so no case runs from cache.
inline constexpr std::size_t kColdBytesPerIteration = std::size_t{256} << 20;
// Tokens per KV cache block in every case.
inline constexpr int kBenchBlockSize = 16;

// Pages a decode kernel walks in lockstep (CPU_FLASH's GEMV paths read rows of 4 or 8 pages a
// step; 4 is the one-row stream's and the chunk walk's order).
inline constexpr int kBenchPagedReadWays = 4;

// The warm twin of a decode case, whose rate is the case's compute ceiling: one request of
// kWarmContext keys (8 MiB of bf16 KV for 8 KV heads of 128), run hot so it stays in L2/L3.
inline constexpr int kWarmContext = 2048;
AttentionBenchCase warm_case(const AttentionBenchCase& bench_case);

// The median of `values` (the upper one of an even count; 0 for none).
double median_of(std::vector<double> values);

// KV bytes one forward call of the case reads (decode) or holds (prefill).
std::size_t kv_bytes_per_layer(const AttentionBenchCase& bench_case);
// How the case's decode reads its cache (per KV head record: K then V), for the paged read probe.
PagedReadOrder paged_read_order(const AttentionBenchCase& bench_case);
// Layer caches a decode iteration rotates through: enough for kColdBytesPerIteration, or 1 hot.
int decode_layers(const AttentionBenchCase& bench_case, bool hot);
// Arena bytes the case needs.
std::size_t arena_bytes(const AttentionBenchCase& bench_case, bool hot);

// One case ready to time: its layer caches over the arena, its batch and CPU_FLASH's metadata.
// Shared by `attnrt bench attention` and the Google Benchmark programs.
class AttentionBenchFixture {
 public:
  AttentionBenchFixture(const AttentionBenchCase& bench_case, const KVArena& arena, bool hot,
                        const CpuFlashBackend& flash);
  ~AttentionBenchFixture();
  AttentionBenchFixture(const AttentionBenchFixture&) = delete;
  AttentionBenchFixture& operator=(const AttentionBenchFixture&) = delete;

  // One iteration: every layer once (decode) or the whole prompt (prefill).
  void run();
  // The case's unit of work per iteration: KV bytes read (decode) or causal FLOPs (prefill).
  double work_per_iteration() const;
  int layers() const;
  // CPU_REFERENCE's work per second on a slice of the case (same unit): one request of at most
  // 1024 keys (decode), or one KV head's query heads over at most 256 tokens (prefill).
  double reference_rate() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Times the fixture (median of at least 5 iterations and 0.5 s, after a warm-up) and the
// reference slice. The result's limit and ratio are left to the caller.
AttentionBenchResult measure_case(const AttentionBenchCase& bench_case, const KVArena& arena,
                                  bool hot, const CpuFlashBackend& flash);

// CPU_FLASH's rate (GB/s) on the decode case's warm twin (warm_case), without the reference.
double measure_warm_rate(const AttentionBenchCase& bench_case, const KVArena& arena,
                         const CpuFlashBackend& flash);

// A decode case against the DRAM read probe, side by side: kDecodeRounds rounds of one probe
// pass, then the case's iterations for at least kRoundSeconds. Rate, limit and ratio are the
// medians over the rounds (the ratio paired round by round).
inline constexpr int kDecodeRounds = 7;
inline constexpr double kRoundSeconds = 0.02;
// `fma_peak_gflops` (the run's FMA probe) gives the case's compute roof, for its roofline.
AttentionBenchResult measure_decode_case(const AttentionBenchCase& bench_case, const KVArena& arena,
                                         bool hot, const CpuFlashBackend& flash,
                                         const DramReadProbe& probe, int threads,
                                         double fma_peak_gflops);

}  // namespace attnrt::cli
