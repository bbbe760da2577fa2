#pragma once
// `attnrt bench attention`: CPU_FLASH decode and prefill figures, each as a fraction of the
// machine's own limits (DRAM read bandwidth for decode, fp32 FMA peak for prefill, both measured
// in the same run by small probes) and as a speed-up over CPU_REFERENCE.

#include <string>
#include <vector>

#include "attnrt/core/dtype.h"

namespace attnrt::cli {

struct BenchAttentionOptions {
  bool json = false;   // one JSON object on stdout instead of the table
  bool hot = false;    // decode on one layer's cache that stays warm (cache-resident figures)
  bool quick = false;  // a subset that runs in under a minute
  int threads = 0;     // 0: every hardware thread
  std::string bf16_products;  // "auto", "dot", "f32" or empty: CPU_FLASH's default (auto)
};

enum class BenchKind { decode, prefill };

// One case: decode reads `length` cached keys per request (one query token each); prefill runs
// one causal request of `length` tokens.
struct AttentionBenchCase {
  BenchKind kind = BenchKind::decode;
  int batch = 1;
  int length = 0;  // context (decode) or tokens (prefill)
  int head_size = 128;
  int num_q_heads = 8;
  int num_kv_heads = 8;
  DType kv_dtype = DType::bf16;
};

struct AttentionBenchResult {
  AttentionBenchCase bench_case;
  double rate = 0.0;            // decode: effective KV GB/s; prefill: GFLOP/s
  double reference_rate = 0.0;  // CPU_REFERENCE on a slice of the case, same unit
  int layers = 1;               // decode: layer caches rotated per iteration
  double bytes_per_iteration = 0.0;
  // What the rate is compared with: decode, the DRAM read probe run between the case's
  // iterations (a shared machine's bandwidth drifts, even within seconds); prefill, the FMA peak
  // of the run.
  double limit = 0.0;
  // rate / limit; decode: the median over its rounds of an iteration's rate over the probe pass
  // right before it, so a drift between rounds does not skew it.
  double ratio = 0.0;
  // Decode only: the same bytes read in the kernels' order with no compute
  // (DramReadProbe::measure_paged), probed in each round too, and the case's rate over it: the
  // share of what the paged read order allows that the kernel reaches.
  double paged_read = 0.0;
  double ratio_to_paged_read = 0.0;
  // Decode only: the case's kernel (same heads, head size and dtype) on a cache small enough to
  // stay in L2/L3, in GB/s: what its arithmetic allows with no DRAM read at all.
  double warm_rate = 0.0;
  // Decode only: the case's own roofline, the lower of the DRAM read probe and the FMA peak over
  // its arithmetic per KV byte (decode_flop_per_byte), with the case's rate over it, paired round
  // by round like `ratio`.
  double flop_per_byte = 0.0;
  double roofline = 0.0;
  double ratio_to_roofline = 0.0;
};

// The arithmetic a decode case does per KV byte it reads, in FMA-peak FLOPs: each K and V element
// meets Hq/Hkv query rows, one f32 multiply-add (2 FLOPs) each, so 2·(Hq/Hkv) / element bytes;
// half that when bf16 dot products (two multiply-adds per lane and instruction) do the work.
double decode_flop_per_byte(const AttentionBenchCase& bench_case, bool bf16_dot_products);

// The cases of a full run, or of --quick.
std::vector<AttentionBenchCase> attention_bench_cases(bool quick);

// Runs the cases and prints the table or the JSON. Returns the process exit code.
int run_bench_attention(const BenchAttentionOptions& options);

}  // namespace attnrt::cli
