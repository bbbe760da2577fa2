#pragma once
// `attnrt run` output: the plan summary printed before the run, and the report after it, as
// text or as JSON (keys documented in docs and checked by the tests).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/engine/engine.h"
#include "kernel_summary.h"
#include "support/engine_workload.h"

namespace attnrt::cli {

// One rank's share of a tensor-parallel run.
struct RankFigures {
  std::uint64_t kv_cache_bytes = 0;
  double collective_seconds = 0;  // inside all-reduces and broadcasts, start-up included
};

struct TensorParallelReport {
  std::string transport;  // "MPI"
  std::vector<RankFigures> ranks;
};

struct RunReport {
  std::string model;
  WorkloadOptions workload;
  std::int64_t requests = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  double run_seconds = 0;  // the step loop, start-up excluded
  EngineStats stats;
  int kv_blocks = 0;  // usable manager blocks
  std::string requested_mode;
  std::string resolved_mode;
  bool fast_prefill_enabled = false;  // the config asks for it and some layer takes the path
  int fast_prefill_layers = 0;
  std::uint64_t output_digest = 0;
  std::optional<DenseCheck> check;
  double check_tolerance = 0;
  bool check_bf16_dot = false;  // CPU_FLASH served the bf16 cache with dot products
  std::optional<FastPrefillComparison> comparison;
  std::optional<TensorParallelReport> tensor_parallel;  // world > 1
  std::optional<CpuFlashKernels> cpu_flash;  // what CPU_FLASH ran, when some group ran it

  bool check_passed() const;  // every token agrees and the logits are within tolerance
};

// The report of a finished run (the check and comparison are filled in by the caller).
RunReport make_run_report(const Engine& engine, const WorkloadOptions& workload,
                          double run_seconds);

// A few lines: the model, KV cache, backends, graph mode and fast prefill, and the workload.
std::string plan_summary(const Engine& engine, const WorkloadOptions& workload);
std::string run_report_text(const RunReport& report);
nlohmann::json run_report_json(const RunReport& report);

}  // namespace attnrt::cli
