// `attnrt bench <what>`: the benchmark subcommands. `step` measures the per-step host path;
// kernel benchmarks join as siblings.

#include <CLI/CLI.hpp>
#include <functional>

#include "bench_step.h"

namespace attnrt::cli {

// Returns the action to run when `bench` was chosen (-1 when it was not).
std::function<int()> add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmark the step path");
  bench->require_subcommand(1);
  std::function<int()> step = add_bench_step_command(*bench);
  return [bench, step]() { return bench->parsed() ? step() : -1; };
}

}  // namespace attnrt::cli
