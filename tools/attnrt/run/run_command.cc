// `attnrt run [CONFIG] [--requests N] [--prompt-len A:B] [--output-len A:B] [--seed S]
// [--fast-prefill on|off] [--cudagraph MODE] [--compare N] [--check] [--json]
// [--collective-timeout S]`: the built-in model driven through the engine on a seeded random
// workload, with its report; under mpirun, on tensor-parallel ranks (rank_group.h).

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "attnrt/config/config_limits.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/config/model_source.h"
#include "attnrt/core/printable.h"
#include "attnrt/runner/kv_cache_plan.h"
#include "bf16_products_option.h"
#include "cli_checks.h"
#include "command_names.h"
#include "commands.h"
#include "core/fail.h"
#include "engine_arg_options.h"
#include "run/progress_line.h"
#include "run/rank_group.h"
#include "run/run_report.h"
#include "support/engine_workload.h"

namespace attnrt::cli {
namespace {

// A workload is held in memory at once; more requests than this are no benchmark of anything.
constexpr int kMaxRequests = 100000;
constexpr std::array<std::string_view, 2> kOnOff = {"on", "off"};

struct RunOptions {
  std::string config_path;
  EngineArgOptions engine_args;
  int requests = 64;
  std::string prompt_len = "32:192";
  std::string output_len = "16:64";
  std::string seed = "0";     // parsed strictly: CLI11 would wrap "-1" to 2^64 - 1
  std::string fast_prefill;   // "on", "off" or empty: the config's
  std::string cudagraph;      // a CUDAGraphMode name or empty: the config's
  std::string bf16_products;  // "auto", "dot", "f32" or empty: CPU_FLASH's default (auto)
  int compare = 16;           // prompts prefilled with fast prefill on and off side by side
  bool check = false;
  bool json = false;
  double collective_timeout_s = 60;
};

// An error every rank saw at the same point: each prints its own line and finishes MPI
// normally; any other error on a rank of many aborts the job.
class StoppedTogether : public Error {
 public:
  using Error::Error;
};

// Every rank passes what failed on it (empty: nothing) before the next collective.
void start_up_gate(Communicator& ranks, const std::string& failure) {
  try {
    check_every_rank(ranks, failure, "at start-up");
  } catch (const Error& error) {
    if (ranks.world() == 1) throw;
    throw StoppedTogether(fmt::format("rank {}: {}", ranks.rank(), error.what()));
  }
}

// A whole number of tokens from 1 to limits::kMaxModelLen, or nothing.
std::optional<int> token_count(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || value < 1 || value > limits::kMaxModelLen) return {};
  return value;
}

// "A:B" (or "A" for A:A) → (A, B).
std::pair<int, int> parse_range(std::string_view option, std::string_view text) {
  const std::size_t colon = text.find(':');
  const std::optional<int> low = token_count(text.substr(0, colon));
  const std::optional<int> high =
      colon == std::string_view::npos ? low : token_count(text.substr(colon + 1));
  if (!low || !high || *high < *low) {
    fail("{}: \"{}\" is not a range of token counts; write A:B with 1 <= A <= B <= {}, e.g. 32:192",
         option, printable(text, 64), limits::kMaxModelLen);
  }
  return {*low, *high};
}

WorkloadOptions workload_options(const RunOptions& options) {
  WorkloadOptions workload;
  workload.num_requests = options.requests;
  std::tie(workload.min_prompt_len, workload.max_prompt_len) =
      parse_range("--prompt-len", options.prompt_len);
  std::tie(workload.min_output_len, workload.max_output_len) =
      parse_range("--output-len", options.output_len);
  workload.seed = parse_unsigned("--seed", options.seed);
  return workload;
}

EngineOptions engine_options(const RunOptions& options) {
  EngineOptions engine;
  engine.seed = parse_unsigned("--seed", options.seed);
  if (!options.fast_prefill.empty()) engine.fast_prefill = options.fast_prefill == "on";
  if (!options.cudagraph.empty()) engine.cudagraph_mode = CUDAGraphMode::parse(options.cudagraph);
  engine.bf16_products = parse_bf16_products_option(options.bf16_products);
  engine.record_logits = options.check;
  return engine;
}

// The config, checked as vLLM checks it before allocating anything, and the engine.
std::unique_ptr<Engine> start_engine(const RunOptions& options, Communicator& ranks,
                                     const WorkloadOptions& workload_opts) {
  LoadedModel model = load_model(options.config_path, to_engine_args(options.engine_args));
  apply_device_budget(model, options.engine_args);
  const EngineConfig config = std::move(model.config);
  // vLLM refuses to start when one request of max_model_len does not fit; so does run, before
  // the model's weights or the cache are allocated.
  if (const KVCacheCapacity capacity = plan_kv_cache_without_views(config).capacity;
      !capacity.fits) {
    fail("{}", capacity.message());
  }
  check_workload_options(workload_opts, config.model.max_model_len);  // before any allocation
  EngineOptions engine_opts = engine_options(options);
  if (ranks.world() > 1) engine_opts.communicator = &ranks;
  return std::make_unique<Engine>(config, engine_opts);
}

// Each rank's KV bytes and time in collectives, gathered on every rank (rank 0 reports them).
TensorParallelReport tensor_parallel_report(const Engine& engine, const RankGroup& group) {
  Communicator& ranks = engine.communicator();
  const std::vector<double> bytes = all_gather_values(
      ranks, static_cast<double>(engine.plan().kv.kv_cache_config.backing_bytes()));
  const std::vector<double> seconds = all_gather_values(ranks, ranks.seconds_in_collectives());
  TensorParallelReport report;
  report.transport = group.transport();
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    report.ranks.push_back({static_cast<std::uint64_t>(bytes[r]), seconds[r]});
  }
  return report;
}

int run_on_ranks(const RunOptions& options, RankGroup& group) {
  Communicator& ranks = group.communicator();
  const bool leader = ranks.rank() == 0;
  std::unique_ptr<Engine> started;
  std::string failure;
  WorkloadOptions workload_opts;
  try {
    workload_opts = workload_options(options);
    started = start_engine(options, ranks, workload_opts);
  } catch (const Error& error) {
    failure = error.what();
  }
  start_up_gate(ranks, failure);
  Engine& engine = *started;
  const EngineOptions engine_opts = engine_options(options);
  const std::vector<WorkloadRequest> workload = make_workload(
      workload_opts, engine.model().vocab_size(), engine.config().model.max_model_len);
  if (leader && !options.json) std::cout << plan_summary(engine, workload_opts) << std::flush;
  if (leader) submit(engine, workload);

  ProgressLine progress;
  const auto start = std::chrono::steady_clock::now();
  engine.run([&progress, leader](const Engine& e) {
    if (leader) progress.update(e);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (leader) progress.finish();

  RunReport report = make_run_report(engine, workload_opts, seconds);
  if (report.fast_prefill_enabled && options.compare > 0 && !workload.empty()) {
    const std::size_t prompts =
        std::min(workload.size(), static_cast<std::size_t>(options.compare));
    EngineOptions compare_opts = engine_opts;
    if (ranks.world() > 1) compare_opts.communicator = &ranks;
    report.comparison =
        compare_fast_prefill(engine.config(), compare_opts, std::span(workload).first(prompts));
  }
  if (options.check) {
    // A near-tie: logits within the tolerance each may order the two tokens either way.
    report.check_bf16_dot = uses_bf16_dot_products(engine);
    report.check_tolerance = dense_check_tolerance(engine);
    report.check = check_against_dense(engine, 2 * report.check_tolerance);
  }
  if (ranks.world() > 1) report.tensor_parallel = tensor_parallel_report(engine, group);
  if (!leader) return 0;
  if (options.json) {
    std::cout << run_report_json(report).dump(2) << '\n';
  } else {
    std::cout << run_report_text(report);
  }
  return options.check && !report.check_passed() ? 1 : 0;
}

int run_run(const RunOptions& options) {
  const std::unique_ptr<RankGroup> group = join_rank_group(options.collective_timeout_s);
  if (group->communicator().world() == 1) return run_on_ranks(options, *group);
  try {
    return run_on_ranks(options, *group);
  } catch (const StoppedTogether& error) {
    // Every rank prints its line before any exits: mpirun stops the job at the first exit.
    std::cerr << "attnrt: error: " + one_line(error.what()) + "\n" << std::flush;
    all_gather_values(group->communicator(), 0);
    return 2;
  } catch (const Error& error) {
    group->abort_all(fmt::format("attnrt: error: rank {}: {}", group->communicator().rank(),
                                 one_line(error.what())));
    throw;
  }
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "Run the built-in model through the engine on a random workload and report");
  run->add_option("CONFIG", options->config_path,
                  "An attnrt config, a Hugging Face config.json or a model folder; the embedded "
                  "tiny-yoco default if omitted")
      ->check(non_empty());
  add_engine_arg_options(*run, options->engine_args);
  run->add_option("--requests", options->requests, "Requests to generate (default 64)")
      ->check(integer_in(0, kMaxRequests));
  run->add_option("--prompt-len", options->prompt_len,
                  "Prompt lengths A:B, uniform (default 32:192)")
      ->check(non_empty());
  run->add_option("--output-len", options->output_len,
                  "Generated tokens per request A:B, uniform (default 16:64)")
      ->check(non_empty());
  run->add_option("--seed", options->seed,
                  "Seed of the workload and the model's weights, 0 to 2^64-1 (default 0)")
      ->check(non_empty());
  run->add_option("--fast-prefill", options->fast_prefill,
                  "KV-sharing fast prefill on or off (default: the config's)")
      ->check(one_of(kOnOff, "on or off"));
  run->add_option("--cudagraph", options->cudagraph,
                  "CUDA-graph mode: NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE")
      ->check(one_of(kCUDAGraphModeNames, "a CUDA-graph mode"));
  add_bf16_products_option(*run, options->bf16_products);
  run->add_option("--compare", options->compare,
                  "Prompts to prefill with fast prefill on and off, side by side, to measure its "
                  "speed-up (default 16; 0 skips)")
      ->check(integer_in(0, kMaxRequests));
  run->add_flag("--check", options->check,
                "Recompute every request densely and compare logits and tokens (exit 1 if not "
                "equal)");
  run->add_flag("--json", options->json, "Print the report as JSON");
  run->add_option("--collective-timeout", options->collective_timeout_s,
                  "Under mpirun: seconds a rank waits in a collective for the others before it "
                  "stops the job (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  return [run, options]() { return run->parsed() ? run_run(*options) : -1; };
}

}  // namespace attnrt::cli
