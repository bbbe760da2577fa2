#pragma once
// `attnrt bench step`: the per-step host path (StepWorkload) timed for decode and mixed batches
// of several sizes, in microseconds of the thread's CPU time per step (one core, unaffected by
// other processes), as a table or as JSON ({"cases": [{"name", "num_reqs", "kind",
// "us_per_step"}]}).

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace attnrt::cli {

struct BenchStepOptions {
  bool json = false;
  std::string config_path;  // empty: the embedded default config
  std::vector<int> num_reqs = {1, 32, 256};
  double min_seconds = 0.2;  // timed per case, after a warm-up
};

// Runs every case and prints the results to stdout; returns the exit code (0).
int run_bench_step(const BenchStepOptions& options);

// Registers `step` (with --json, --config, --num-reqs, --min-seconds) under `bench`; the returned
// action runs it when chosen and returns -1 otherwise.
std::function<int()> add_bench_step_command(CLI::App& bench);

}  // namespace attnrt::cli
