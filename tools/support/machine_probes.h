#pragma once
// Small probes of the machine's limits, so that kernel figures can be read as fractions of what
// the hardware allows: streaming DRAM read bandwidth and the fp32 FMA peak, both measured with
// the same SIMD target and thread count as CPU_FLASH's kernels.

#include <cstddef>
#include <memory>

namespace attnrt {

class Buffer;

// The order in which a paged decode reads its cache (LBNHC): pages of `rows_per_page` token
// rows, each row `records_per_row` records of `record_bytes` (one per KV head: its K, then its
// V). `ways` pages are walked in lockstep, one token row of each a step, and within a step
// record by record: record r of every page's row, then record r + 1.
struct PagedReadOrder {
  int record_bytes = 512;
  int records_per_row = 8;
  int rows_per_page = 16;
  int ways = 4;
};

// The DRAM read probe over a buffer kept for repeated measurements: a benchmark re-probes next
// to each case, because the bandwidth a shared machine gives drifts over minutes.
class DramReadProbe {
 public:
  explicit DramReadProbe(std::size_t bytes = std::size_t{1} << 30);
  // Each of `num_threads` threads sums its own contiguous part of the buffer with vector loads;
  // the best of `repeats` passes, in GB/s (1e9 B/s).
  double measure(int num_threads, int repeats = 5) const;
  // The same bytes read in a paged decode's order, with no compute: each thread walks the pages
  // of its part in a shuffled order (fixed seed), as `order` says. What any kernel reading the
  // cache in that order can reach. Throws attnrt::Error for an order that does not fit.
  double measure_paged(const PagedReadOrder& order, int num_threads, int repeats = 5) const;

 private:
  std::shared_ptr<Buffer> buffer_;
};

// Independent chains of fp32 fused multiply-adds in the widest vectors of the dispatched target
// on every thread; the best of `repeats` runs, in GFLOP/s (an FMA counts 2 FLOPs).
double measure_fma_peak_gflops(int num_threads, int repeats = 5);

}  // namespace attnrt
