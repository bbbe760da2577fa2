#pragma once
// Small probes of the machine's limits, so that kernel figures can be read as fractions of what
// the hardware allows: streaming DRAM read bandwidth and the fp32 FMA peak, both measured with
// the same SIMD target and thread count as CPU_FLASH's kernels.

#include <cstddef>
#include <memory>

namespace attnrt {

class Buffer;

// The DRAM read probe over a buffer kept for repeated measurements: a benchmark re-probes next
// to each case, because the bandwidth a shared machine gives drifts over minutes.
class DramReadProbe {
 public:
  explicit DramReadProbe(std::size_t bytes = std::size_t{1} << 30);
  // Each of `num_threads` threads sums its own contiguous part of the buffer with vector loads;
  // the best of `repeats` passes, in GB/s (1e9 B/s).
  double measure(int num_threads, int repeats = 5) const;

 private:
  std::shared_ptr<Buffer> buffer_;
};

// Independent chains of fp32 fused multiply-adds in the widest vectors of the dispatched target
// on every thread; the best of `repeats` runs, in GFLOP/s (an FMA counts 2 FLOPs).
double measure_fma_peak_gflops(int num_threads, int repeats = 5);

}  // namespace attnrt
