// `attnrt bench attention`: probes the machine, runs every case with CPU_FLASH and a slice of it
// with CPU_REFERENCE, and prints a table (or JSON) of rates, ratios to the limits and speed-ups.

#include "bench/bench_attention.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <tuple>

#include "backends/cpu_flash/bf16_products.h"
#include "backends/cpu_flash/simd_targets.h"
#include "bench/bench_attention_cases.h"
#include "bf16_products_option.h"
#include "support/machine_probes.h"

namespace attnrt::cli {
namespace {

struct MachineLimits {
  double dram_read_gbps = 0.0;
  double paged_read_gbps = 0.0;  // the decode cases' read order alone (measure_paged)
  double fma_peak_gflops = 0.0;
};

std::string_view kind_name(BenchKind kind) {
  return kind == BenchKind::decode ? "decode" : "prefill";
}

std::vector<AttentionBenchCase> decode_cases(bool quick) {
  const std::vector<int> batches = quick ? std::vector<int>{1, 8} : std::vector<int>{1, 8, 32};
  const std::vector<int> contexts =
      quick ? std::vector<int>{4096} : std::vector<int>{512, 1024, 2048, 4096, 8192, 16384};
  const std::vector<DType> dtypes =
      quick ? std::vector<DType>{DType::bf16} : std::vector<DType>{DType::bf16, DType::f16};
  std::vector<AttentionBenchCase> cases;
  for (DType dtype : dtypes) {
    for (int q_heads : {8, 32}) {
      for (int batch : batches) {
        for (int context : contexts) {
          cases.push_back({BenchKind::decode, batch, context, 128, q_heads, 8, dtype});
        }
      }
    }
  }
  if (quick) cases.push_back({BenchKind::decode, 8, 4096, 128, 32, 8, DType::f16});
  return cases;
}

std::vector<AttentionBenchCase> prefill_cases(bool quick) {
  if (quick) {
    return {{BenchKind::prefill, 1, 2048, 128, 32, 8, DType::bf16},
            {BenchKind::prefill, 1, 1024, 256, 32, 8, DType::bf16},
            {BenchKind::prefill, 1, 2048, 128, 32, 8, DType::f16}};
  }
  std::vector<AttentionBenchCase> cases;
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (int head_size : {128, 256}) {
      for (int tokens : {512, 1024, 2048, 4096}) {
        cases.push_back({BenchKind::prefill, 1, tokens, head_size, 32, 8, dtype});
      }
    }
  }
  return cases;
}

// Runs the cases grouped by dtype, each group on one arena sized for its largest case; each
// decode case in rounds with DRAM probe passes of its own.
std::vector<AttentionBenchResult> run_cases(const std::vector<AttentionBenchCase>& cases, bool hot,
                                            const CpuFlashBackend& flash, int threads,
                                            const DramReadProbe& probe, const MachineLimits& limits,
                                            bool progress) {
  std::map<DType, std::size_t> arena_size;
  for (const AttentionBenchCase& c : cases) {
    std::size_t bytes = arena_bytes(c, hot);
    if (c.kind == BenchKind::decode) bytes = std::max(bytes, arena_bytes(warm_case(c), true));
    arena_size[c.kv_dtype] = std::max(arena_size[c.kv_dtype], bytes);
  }
  std::vector<AttentionBenchResult> results(cases.size());
  for (const auto& [dtype, bytes] : arena_size) {
    const KVArena arena(dtype, bytes);
    // Warm rates by kernel (heads, head size): one measurement serves every batch and context.
    std::map<std::tuple<int, int, int>, double> warm_rates;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].kv_dtype != dtype) continue;
      if (progress) {
        std::cerr << fmt::format("\r  case {}/{} ...", i + 1, cases.size()) << std::flush;
      }
      if (cases[i].kind == BenchKind::decode) {
        results[i] = measure_decode_case(cases[i], arena, hot, flash, probe, threads,
                                         limits.fma_peak_gflops);
        const AttentionBenchCase& c = cases[i];
        const auto kernel = std::make_tuple(c.num_q_heads, c.num_kv_heads, c.head_size);
        if (!warm_rates.contains(kernel)) {
          warm_rates[kernel] = measure_warm_rate(c, arena, flash);
        }
        results[i].warm_rate = warm_rates[kernel];
      } else {
        results[i] = measure_case(cases[i], arena, hot, flash);
        results[i].limit = limits.fma_peak_gflops;
        results[i].ratio = results[i].rate / results[i].limit;
      }
    }
  }
  if (progress) std::cerr << "\r" << std::string(30, ' ') << "\r";
  return results;
}

std::string rate_text(const AttentionBenchCase& c, double rate) {
  return c.kind == BenchKind::decode ? fmt::format("{:.1f} GB/s", rate)
                                     : fmt::format("{:.1f} GFLOP/s", rate);
}

// What bf16 products would gain here, timed both ways: it informs the user (who may pin the other
// choice with --bf16-products) and never chooses, so the kernels' numbers do not depend on it.
struct Bf16ProbeFigures {
  double decode_speedup = 0;   // f32 seconds / dot-product seconds
  double prefill_speedup = 0;  // f32 seconds / AMX-tile (else dot-product) seconds
  double max_error = 0;        // relative to max(1, |f32 output|), both paths
};

std::optional<Bf16ProbeFigures> probe_bf16_products_here(int threads) {
  if (!cpu_flash_bf16_dot_products()) return std::nullopt;
  const auto decode = cpu_flash::probe_bf16_products(threads, cpu_flash::Bf16ProbeCase::decode_dot);
  const auto prefill = cpu_flash::probe_bf16_products(threads, cpu_flash::Bf16ProbeCase::prefill);
  return Bf16ProbeFigures{decode.f32_seconds / decode.dot_seconds,
                          prefill.f32_seconds / prefill.dot_seconds,
                          std::max(decode.max_error, prefill.max_error)};
}

std::string bf16_probe_text(const std::optional<Bf16ProbeFigures>& probe) {
  if (!probe) return "bf16 products probe: none (this CPU has no AVX512-BF16)";
  return fmt::format(
      "bf16 products probe (informs, never chooses; pin with --bf16-products): decode {} ran at "
      "{:.2f}x the speed of f32 products, prefill {} at {:.2f}x; error {:.1e}",
      "AVX512-BF16 dot products", probe->decode_speedup, cpu_flash_bf16_prefill_products(),
      probe->prefill_speedup, probe->max_error);
}

nlohmann::json bf16_probe_json(const std::optional<Bf16ProbeFigures>& probe) {
  if (!probe) return nullptr;
  return {{"decode_speedup", probe->decode_speedup},
          {"prefill_speedup", probe->prefill_speedup},
          {"max_error", probe->max_error}};
}

void print_table(const std::vector<AttentionBenchResult>& results, const MachineLimits& limits,
                 const BenchAttentionOptions& options, const CpuFlashBackend& flash, int threads,
                 const std::optional<Bf16ProbeFigures>& bf16_probe) {
  fmt::print("attnrt bench attention: CPU_FLASH ({}), {} threads{}\nbf16 caches: {}\n{}\n",
             cpu_flash_simd_target(), threads,
             options.hot ? ", --hot (decode on one warm layer)" : "", flash.bf16_products().reason,
             bf16_probe_text(bf16_probe));
  fmt::print(
      "limits (own probes, medians of the run's passes): DRAM read {:.1f} GB/s; the same bytes "
      "read in the decode kernels' order alone {:.1f} GB/s ({:.2f} of it); fp32 FMA peak {:.1f} "
      "GFLOP/s\n",
      limits.dram_read_gbps, limits.paged_read_gbps, limits.paged_read_gbps / limits.dram_read_gbps,
      limits.fma_peak_gflops);
  fmt::print(
      "decode: effective KV bytes read per second; limit: the DRAM read probed between its "
      "iterations; ratio: median over {} rounds of (case rate / probe pass just before it); "
      "paged: the same against a pass that only reads {}-token pages, {} in lockstep row by row, "
      "as the kernels do; compute: the same kernel on one request of {} keys that stays in "
      "cache (its arithmetic's ceiling), over the limit; roofline: the lower of the DRAM probe "
      "and the FMA peak over the case's FLOP per KV byte (2·q/kv per element, halved for bf16 "
      "dot products), /roof the rate over it, paired round by round\n"
      "prefill: causal FLOP/s (4·q·k·d per head, halved), ratio to FMA peak\n\n",
      kDecodeRounds, kBenchBlockSize, kBenchPagedReadWays, kWarmContext);
  fmt::print(
      "{:<8} {:>5} {:>7} {:>4} {:>6} {:<9} {:>15} {:>15} {:>6} {:>12} {:>6} {:>6} {:>7} {:>8} "
      "{:>7} {:>9}\n",
      "kind", "batch", "ctx/tok", "head", "q/kv", "kv dtype", "rate", "limit", "ratio", "roofline",
      "/roof", "paged", "compute", "vs ref", "layers", "MiB/iter");
  for (const AttentionBenchResult& r : results) {
    const AttentionBenchCase& c = r.bench_case;
    const bool decode = c.kind == BenchKind::decode;
    const std::string paged = decode ? fmt::format("{:.2f}", r.ratio_to_paged_read) : "-";
    const std::string compute = decode ? fmt::format("{:.2f}", r.warm_rate / r.limit) : "-";
    const std::string roof = decode ? fmt::format("{:.1f} GB/s", r.roofline) : "-";
    const std::string to_roof = decode ? fmt::format("{:.2f}", r.ratio_to_roofline) : "-";
    fmt::print(
        "{:<8} {:>5} {:>7} {:>4} {:>6} {:<9} {:>15} {:>15} {:>6.2f} {:>12} {:>6} {:>6} {:>7} "
        "{:>7.0f}x {:>7} {:>9.0f}\n",
        kind_name(c.kind), c.batch, c.length, c.head_size,
        fmt::format("{}/{}", c.num_q_heads, c.num_kv_heads), dtype_name(c.kv_dtype),
        rate_text(r.bench_case, r.rate), rate_text(r.bench_case, r.limit), r.ratio, roof, to_roof,
        paged, compute, r.rate / r.reference_rate, r.layers, r.bytes_per_iteration / (1 << 20));
  }
  fmt::print(
      "\nvs ref: CPU_REFERENCE (single-threaded oracle) timed on one request of at most 1024 "
      "keys (decode) or one KV head's query heads over at most 256 tokens (prefill).\n");
}

nlohmann::json to_json(const std::vector<AttentionBenchResult>& results,
                       const MachineLimits& limits, const BenchAttentionOptions& options,
                       const CpuFlashBackend& flash, int threads,
                       const std::optional<Bf16ProbeFigures>& bf16_probe) {
  nlohmann::json cases = nlohmann::json::array();
  for (const AttentionBenchResult& r : results) {
    const AttentionBenchCase& c = r.bench_case;
    const bool decode = c.kind == BenchKind::decode;
    nlohmann::json item = {{"kind", kind_name(c.kind)},
                           {"batch", c.batch},
                           {decode ? "context" : "tokens", c.length},
                           {"head_size", c.head_size},
                           {"num_q_heads", c.num_q_heads},
                           {"num_kv_heads", c.num_kv_heads},
                           {"kv_dtype", dtype_name(c.kv_dtype)},
                           {decode ? "gbps" : "gflops", r.rate},
                           {"limit", r.limit},
                           {"ratio_to_limit", r.ratio},
                           {"speedup_vs_reference", r.rate / r.reference_rate}};
    if (decode) {
      item["paged_read_gbps"] = r.paged_read;
      item["ratio_to_paged_read"] = r.ratio_to_paged_read;
      item["warm_gbps"] = r.warm_rate;
      item["flop_per_byte"] = r.flop_per_byte;
      item["roofline_gbps"] = r.roofline;
      item["ratio_to_roofline"] = r.ratio_to_roofline;
      item["layers"] = r.layers;
      item["bytes_per_iteration"] = r.bytes_per_iteration;
    }
    cases.push_back(std::move(item));
  }
  return {{"dram_read_gbps", limits.dram_read_gbps},
          {"paged_read_gbps", limits.paged_read_gbps},
          {"fma_peak_gflops", limits.fma_peak_gflops},
          {"threads", threads},
          {"simd_target", cpu_flash_simd_target()},
          {"bf16_dot_products", flash.runs_bf16_dot_products()},
          {"bf16_prefill_products",
           flash.runs_bf16_prefill_products() ? cpu_flash_bf16_prefill_products() : "f32 products"},
          {"bf16_products", flash.bf16_products().reason},
          {"bf16_products_requested", bf16_products_name(flash.options().bf16_products)},
          {"bf16_products_probe", bf16_probe_json(bf16_probe)},
          {"hot", options.hot},
          {"cases", std::move(cases)}};
}

}  // namespace

std::vector<AttentionBenchCase> attention_bench_cases(bool quick) {
  std::vector<AttentionBenchCase> cases = decode_cases(quick);
  const std::vector<AttentionBenchCase> prefill = prefill_cases(quick);
  cases.insert(cases.end(), prefill.begin(), prefill.end());
  return cases;
}

int run_bench_attention(const BenchAttentionOptions& options) {
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  CpuFlashOptions flash_options = cpu_flash_options_with(options.bf16_products);
  flash_options.num_threads = threads;
  const CpuFlashBackend flash(flash_options);
  const std::optional<Bf16ProbeFigures> bf16_probe = probe_bf16_products_here(threads);
  const DramReadProbe probe;
  MachineLimits limits;
  limits.fma_peak_gflops = measure_fma_peak_gflops(threads);
  std::vector<double> probes{probe.measure(threads)};
  std::vector<double> paged_probes;
  const std::vector<AttentionBenchResult> results =
      run_cases(attention_bench_cases(options.quick), options.hot, flash, threads, probe, limits,
                !options.json && isatty(fileno(stderr)) != 0);  // \r only on a terminal
  for (const AttentionBenchResult& r : results) {
    if (r.bench_case.kind != BenchKind::decode) continue;
    probes.push_back(r.limit);
    paged_probes.push_back(r.paged_read);
  }
  limits.dram_read_gbps = median_of(probes);
  limits.paged_read_gbps = median_of(paged_probes);
  if (options.json) {
    std::cout << to_json(results, limits, options, flash, threads, bf16_probe).dump(2) << '\n';
  } else {
    print_table(results, limits, options, flash, threads, bf16_probe);
  }
  return 0;
}

}  // namespace attnrt::cli
