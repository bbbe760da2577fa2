// `attnrt bench <what>`: the benchmark subcommands. `attention` measures the CPU_FLASH kernels
// against the machine's limits; more targets (the per-step host path) join as siblings.

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

#include "bench/bench_attention.h"
#include "bench/bench_step.h"
#include "bf16_products_option.h"
#include "cli_checks.h"

namespace attnrt::cli {

// Returns the action to run when `bench` was chosen (-1 when it was not).
std::function<int()> add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmark attention kernels and the step path");
  bench->require_subcommand(1);

  auto attention_options = std::make_shared<BenchAttentionOptions>();
  CLI::App* attention = bench->add_subcommand(
      "attention", "CPU_FLASH decode and prefill against the machine's DRAM and FMA limits");
  attention->add_flag("--json", attention_options->json, "Print the results as JSON");
  attention->add_flag("--hot", attention_options->hot,
                      "Decode on one layer's cache that stays warm instead of >= 256 MiB per "
                      "iteration");
  attention->add_flag("--quick", attention_options->quick, "A subset that runs in under a minute");
  attention
      ->add_option("--threads", attention_options->threads,
                   "Threads for the kernels and the probes (default: all hardware threads)")
      ->check(integer_in(0, 1024));
  add_bf16_products_option(*attention, attention_options->bf16_products);

  std::function<int()> step = add_bench_step_command(*bench);

  return [bench, attention, attention_options, step]() {
    if (!bench->parsed()) return -1;
    if (attention->parsed()) return run_bench_attention(*attention_options);
    return step();
  };
}

}  // namespace attnrt::cli
