// `attnrt run`'s plan summary and report.

#include "run/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "attnrt/config/config_loader.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "kernel_summary.h"

namespace attnrt::cli {
namespace {

double per_second(std::int64_t tokens, double seconds) {
  return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
}

std::string digest_hex(std::uint64_t digest) {
  return fmt::format("{:016x}", digest);
}

// "CPU_REFERENCE (4 layers), FastPrefillCPU_REFERENCE (2 layers)", in attention group order.
std::string backend_summary(const AttentionPlan& plan) {
  std::vector<std::pair<std::string, std::size_t>> backends;
  for (const std::vector<AttentionGroup>& groups : plan.backends.attn_groups) {
    for (const AttentionGroup& group : groups) {
      const std::string name = group.backend->name();
      auto it = std::find_if(backends.begin(), backends.end(),
                             [&](const auto& entry) { return entry.first == name; });
      if (it == backends.end()) it = backends.insert(backends.end(), {name, 0});
      it->second += group.layer_names.size();
    }
  }
  std::string text;
  for (const auto& [name, layers] : backends) {
    text += fmt::format("{}{} ({} layer{})", text.empty() ? "" : ", ", name, layers,
                        layers == 1 ? "" : "s");
  }
  return text;
}

void append_check(std::string& text, const RunReport& report) {
  const DenseCheck& check = *report.check;
  text += fmt::format(
      "check against a dense recomputation of every request: {}/{} tokens agree{}, max |logit "
      "diff| {:.3g} (tolerance {:.0e}{}): {}\n",
      check.tokens_agree, check.tokens_total,
      check.near_ties > 0 ? fmt::format(", {} near-tie{} (dense logits within 2x the tolerance)",
                                        check.near_ties, check.near_ties == 1 ? "" : "s")
                          : "",
      check.max_abs_logit_diff, report.check_tolerance,
      report.check_bf16_dot ? ", bf16 products" : "", report.check_passed() ? "OK" : "FAILED");
}

void append_comparison(std::string& text, const FastPrefillComparison& c) {
  text += fmt::format(
      "fast prefill on vs off, side by side ({} prompts, {} tokens, prefill only, stepped "
      "alternately):\n  on {:.2f} s, off {:.2f} s: {:.2f}x faster; theoretical 1/(1-f) = {:.2f}x "
      "({:.0f} % of it); first tokens {}\n",
      c.prompts, c.prompt_tokens, c.seconds_on, c.seconds_off, c.speedup, c.theoretical_speedup,
      c.theoretical_speedup > 1 ? 100 * (c.speedup - 1) / (c.theoretical_speedup - 1) : 0.0,
      c.first_tokens_match ? "identical" : "DIFFER");
}

void append_tensor_parallel(std::string& text, const TensorParallelReport& tp) {
  text += fmt::format("  tensor parallel: {} ranks over {}\n", tp.ranks.size(), tp.transport);
  for (std::size_t r = 0; r < tp.ranks.size(); ++r) {
    text += fmt::format("    rank {}: KV cache {}, {:.3f} s in collectives\n", r,
                        format_size(tp.ranks[r].kv_cache_bytes), tp.ranks[r].collective_seconds);
  }
}

}  // namespace

bool RunReport::check_passed() const {
  return check && check->tokens_agree + check->near_ties == check->tokens_total &&
         check->max_abs_logit_diff <= check_tolerance;
}

RunReport make_run_report(const Engine& engine, const WorkloadOptions& workload,
                          double run_seconds) {
  RunReport report;
  report.model = engine.config().model.name;
  report.workload = workload;
  for (const RequestRecord& request : engine.requests()) {
    report.requests += 1;
    report.prompt_tokens += static_cast<std::int64_t>(request.prompt.size());
    report.output_tokens += static_cast<std::int64_t>(request.output.size());
  }
  report.run_seconds = run_seconds;
  report.stats = engine.stats();
  report.kv_blocks = engine.num_kv_blocks();
  report.cpu_flash = cpu_flash_kernels(engine.plan());
  report.requested_mode = std::string(engine.plan().requested_mode.name());
  report.resolved_mode = std::string(engine.plan().cudagraph.mode.name());
  report.fast_prefill_layers = static_cast<int>(engine.plan().fast_prefill_layers.size());
  report.fast_prefill_enabled =
      engine.config().cache.kv_sharing_fast_prefill && report.fast_prefill_layers > 0;
  report.output_digest = output_digest(engine.requests());
  return report;
}

std::string plan_summary(const Engine& engine, const WorkloadOptions& workload) {
  const EngineConfig& config = engine.config();
  const AttentionPlan& plan = engine.plan();
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  const CudaGraphManager& graphs = engine.graph_manager();
  std::string text =
      fmt::format("{}: {} layers, hidden {}, vocabulary {}, {} weights\n", config.model.name,
                  config.model.layers.size(), config.model.hidden_size, config.model.vocab_size,
                  format_size(engine.model().weight_bytes()));
  text += fmt::format(
      "  KV cache: {} blocks of {} tokens, {} groups, {} {} ({} tokens per layer)\n", kv.num_blocks,
      config.cache.block_size, kv.kv_cache_groups.size(), format_size(kv.backing_bytes()),
      dtype_name(config.cache.dtype), tokens_capacity(kv));
  text += fmt::format("  backends: {}\n", backend_summary(plan));
  const std::string kernels = cpu_flash_summary(plan);
  if (!kernels.empty()) text += fmt::format("  {}\n", kernels);
  text += fmt::format(
      "  CUDA graphs (emulated): {} (requested {}); {} FULL captured, {} PIECEWISE sizes\n",
      plan.cudagraph.mode.name(), plan.requested_mode.name(), engine.num_captured_graphs(),
      graphs.capture_descriptors(CUDAGraphMode::PIECEWISE).size());
  const bool fast = config.cache.kv_sharing_fast_prefill && !plan.fast_prefill_layers.empty();
  text += fmt::format(
      "  fast prefill: {}\n",
      fast ? fmt::format("on, {} trailing KV-sharing layers", plan.fast_prefill_layers.size())
           : std::string("off"));
  text += fmt::format(
      "  workload: {} requests, prompts {}:{} tokens, outputs {}:{} tokens, seed {}, all queued "
      "before the first step\n",
      workload.num_requests, workload.min_prompt_len, workload.max_prompt_len,
      workload.min_output_len, workload.max_output_len, workload.seed);
  return text;
}

std::string run_report_text(const RunReport& report) {
  const EngineStats& s = report.stats;
  std::string text =
      fmt::format("{} requests: {} prompt + {} generated tokens in {:.2f} s\n", report.requests,
                  report.prompt_tokens, report.output_tokens, report.run_seconds);
  text += fmt::format("  prefill {:>8} tokens at {:>8.0f} tokens/s\n", s.prefill_tokens,
                      per_second(s.prefill_tokens, s.prefill_seconds));
  text += fmt::format("  decode  {:>8} tokens at {:>8.0f} tokens/s\n", s.decode_tokens,
                      per_second(s.decode_tokens, s.decode_seconds));
  text += fmt::format(
      "  steps {}: FULL {}, PIECEWISE {}, NONE {}; padding {:.1f} % ({} token rows, {} requests)\n",
      s.steps, s.steps_in(CUDAGraphMode::FULL), s.steps_in(CUDAGraphMode::PIECEWISE),
      s.steps_in(CUDAGraphMode::NONE), 100 * s.padding_overhead(), s.padded_tokens,
      s.padded_requests);
  if (report.fast_prefill_enabled) {
    text += fmt::format(
        "  fast prefill: {} rows skipped by each of {} layers in {} steps; ~{:.2f} s saved "
        "(estimate: forward time x skipped share of the layer work)\n",
        s.fast_prefill_rows_skipped, report.fast_prefill_layers, s.fast_prefill_steps,
        s.fast_prefill_seconds_saved);
  } else {
    text += "  fast prefill: off\n";
  }
  text += fmt::format("  KV cache: peak {} of {} blocks in use; {} preemptions\n", s.peak_kv_blocks,
                      report.kv_blocks, s.preemptions);
  if (report.tensor_parallel) append_tensor_parallel(text, *report.tensor_parallel);
  text += fmt::format("  output digest {}\n", digest_hex(report.output_digest));
  if (report.comparison) append_comparison(text, *report.comparison);
  if (report.check) append_check(text, report);
  return text;
}

nlohmann::json run_report_json(const RunReport& report) {
  const EngineStats& s = report.stats;
  nlohmann::json fast_prefill = {{"enabled", report.fast_prefill_enabled},
                                 {"layers", report.fast_prefill_layers},
                                 {"rows_skipped", s.fast_prefill_rows_skipped},
                                 {"steps", s.fast_prefill_steps},
                                 {"seconds_saved_estimate", s.fast_prefill_seconds_saved},
                                 {"theoretical_speedup", s.fast_prefill_theoretical_speedup()}};
  if (report.comparison) {
    const FastPrefillComparison& c = *report.comparison;
    fast_prefill["comparison"] = {{"prompts", c.prompts},
                                  {"prompt_tokens", c.prompt_tokens},
                                  {"seconds_on", c.seconds_on},
                                  {"seconds_off", c.seconds_off},
                                  {"speedup", c.speedup},
                                  {"theoretical_speedup", c.theoretical_speedup},
                                  {"first_tokens_match", c.first_tokens_match}};
  }
  nlohmann::json json = {
      {"model", report.model},
      {"requests", report.requests},
      {"prompt_tokens", report.prompt_tokens},
      {"output_tokens", report.output_tokens},
      {"run_seconds", report.run_seconds},
      {"prefill_tokens", s.prefill_tokens},
      {"decode_tokens", s.decode_tokens},
      {"prefill_tokens_per_s", per_second(s.prefill_tokens, s.prefill_seconds)},
      {"decode_tokens_per_s", per_second(s.decode_tokens, s.decode_seconds)},
      {"steps", s.steps},
      {"steps_by_mode",
       {{"FULL", s.steps_in(CUDAGraphMode::FULL)},
        {"PIECEWISE", s.steps_in(CUDAGraphMode::PIECEWISE)},
        {"NONE", s.steps_in(CUDAGraphMode::NONE)}}},
      {"padding",
       {{"tokens", s.padded_tokens},
        {"requests", s.padded_requests},
        {"overhead", s.padding_overhead()}}},
      {"cudagraph",
       {{"requested_mode", report.requested_mode}, {"resolved_mode", report.resolved_mode}}},
      {"fast_prefill", fast_prefill},
      {"kv_cache", {{"blocks", report.kv_blocks}, {"peak_blocks_in_use", s.peak_kv_blocks}}},
      {"preemptions", s.preemptions},
      {"output_digest", digest_hex(report.output_digest)},
      {"workload",
       {{"seed", report.workload.seed},
        {"prompt_len", {report.workload.min_prompt_len, report.workload.max_prompt_len}},
        {"output_len", {report.workload.min_output_len, report.workload.max_output_len}}}}};
  if (report.tensor_parallel) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankFigures& rank : report.tensor_parallel->ranks) {
      ranks.push_back({{"kv_cache_bytes", rank.kv_cache_bytes},
                       {"collective_seconds", rank.collective_seconds}});
    }
    json["tensor_parallel"] = {{"transport", report.tensor_parallel->transport},
                               {"world", report.tensor_parallel->ranks.size()},
                               {"ranks", ranks}};
  }
  if (report.cpu_flash) json["cpu_flash"] = cpu_flash_json(*report.cpu_flash);
  if (report.check) {
    json["check"] = {{"max_abs_logit_diff", report.check->max_abs_logit_diff},
                     {"tokens_agree", report.check->tokens_agree},
                     {"near_ties", report.check->near_ties},
                     {"bf16_dot_products", report.check_bf16_dot},
                     {"tokens_total", report.check->tokens_total},
                     {"tolerance", report.check_tolerance},
                     {"passed", report.check_passed()}};
  }
  return json;
}

}  // namespace attnrt::cli
