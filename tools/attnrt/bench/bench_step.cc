// `attnrt bench step`: microseconds per step of the runner's host path (DESIGN.md §4).

#include "bench/bench_step.h"

#include <fmt/format.h>
#include <time.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "attnrt/config/config_loader.h"
#include "bench/step_workload.h"
#include "cli_checks.h"
#include "core/fail.h"

namespace attnrt::cli {
namespace {

struct CaseResult {
  std::string name;
  int num_reqs = 0;
  bench::StepKind kind = bench::StepKind::decode;
  double us_per_step = 0.0;
};

// CPU time of the calling thread: what one core spends, whatever else the machine runs.
double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Steps until `min_seconds` of CPU time have passed (and at least 100 steps), after 50 warm-up
// steps.
double time_steps(bench::StepWorkload& workload, double min_seconds) {
  for (int i = 0; i < 50; ++i) workload.step();
  const double start = thread_seconds();
  long steps = 0;
  double elapsed = 0.0;
  while (steps < 100 || elapsed < min_seconds) {
    for (int i = 0; i < 20; ++i) workload.step();
    steps += 20;
    elapsed = thread_seconds() - start;
  }
  return elapsed * 1e6 / static_cast<double>(steps);
}

void print_table(const std::vector<CaseResult>& results) {
  fmt::print("{:<14} {:>8} {:>8} {:>12}\n", "case", "requests", "kind", "us/step");
  for (const CaseResult& r : results) {
    fmt::print("{:<14} {:>8} {:>8} {:>12.2f}\n", r.name, r.num_reqs, bench::step_kind_name(r.kind),
               r.us_per_step);
  }
}

void print_json(const std::vector<CaseResult>& results) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& r : results) {
    cases.push_back({{"name", r.name},
                     {"num_reqs", r.num_reqs},
                     {"kind", std::string(bench::step_kind_name(r.kind))},
                     {"us_per_step", r.us_per_step}});
  }
  std::cout << nlohmann::json{{"cases", cases}}.dump(2) << '\n';
}

}  // namespace

int run_bench_step(const BenchStepOptions& options) {
  const EngineConfig config =
      options.config_path.empty() ? default_config() : load_config_file(options.config_path);
  std::vector<CaseResult> results;
  for (bench::StepKind kind : {bench::StepKind::decode, bench::StepKind::mixed}) {
    for (int num_reqs : options.num_reqs) {
      if (num_reqs <= 0) fail("bench step: --num-reqs must be positive, got {}", num_reqs);
      const auto workload = std::make_unique<bench::StepWorkload>(num_reqs, kind, config);
      const std::string name = fmt::format("{}/{}", bench::step_kind_name(kind), num_reqs);
      results.push_back({name, num_reqs, kind, time_steps(*workload, options.min_seconds)});
    }
  }
  if (options.json) {
    print_json(results);
  } else {
    print_table(results);
  }
  return 0;
}

std::function<int()> add_bench_step_command(CLI::App& bench) {
  auto options = std::make_shared<BenchStepOptions>();
  CLI::App* step = bench.add_subcommand("step", "time the per-step host path (us per step)");
  step->add_flag("--json", options->json, "print JSON: {\"cases\": [...]}");
  step->add_option("--config", options->config_path, "engine config (default: built-in)")
      ->check(non_empty());
  step->add_option("--num-reqs", options->num_reqs, "request counts to time")
      ->capture_default_str()
      ->check(integer_in(1, 65536));
  step->add_option("--min-seconds", options->min_seconds, "timed seconds per case")
      ->capture_default_str()
      ->check(number_in(0.0, 3600.0));
  return [step, options] { return step->parsed() ? run_bench_step(*options) : -1; };
}

}  // namespace attnrt::cli
