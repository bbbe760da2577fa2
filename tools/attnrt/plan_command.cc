// `attnrt plan [CONFIG] [--memory SIZE] [--json]`: explains the KV cache plan of a model config.

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "cli_checks.h"
#include "commands.h"
#include "plan_report.h"

namespace attnrt::cli {
namespace {

struct PlanOptions {
  std::string config_path;
  std::string memory;
  bool json = false;
};

EngineConfig without_kv_sharing(EngineConfig config) {
  for (LayerConfig& layer : config.model.layers) layer.kv_sharing_target.clear();
  return config;
}

int run_plan(const PlanOptions& options) {
  EngineConfig config =
      options.config_path.empty() ? default_config() : load_config_file(options.config_path);
  if (!options.memory.empty()) {
    try {
      config.cache.memory = parse_size(options.memory);
      validate_config(config);
    } catch (const Error& error) {
      fail("--memory: {}", error.what());
    }
  }
  const BackendRegistry registry = backend_registry_for(config);
  const AttentionPlan plan = plan_attention(config, registry);
  if (options.json) {
    std::cout << plan_to_json(config, plan).dump(2) << '\n';
    return 0;
  }
  // The comparison is extra information: a budget that fits only thanks to sharing is still valid.
  std::optional<KVCachePlan> without_sharing;
  if (!plan.kv.shared_layers.empty()) {
    try {
      without_sharing = plan_kv_cache(without_kv_sharing(config));
    } catch (const Error&) {
      without_sharing.reset();
    }
  }
  std::cout << plan_to_text(config, plan, without_sharing);
  return 0;
}

}  // namespace

std::function<int()> add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* plan =
      app.add_subcommand("plan", "Explain the KV cache and attention plan of a config");
  plan->add_option("CONFIG", options->config_path,
                   "Model and engine config (JSON); the embedded tiny-yoco default if omitted")
      ->check(non_empty());
  plan->add_option("--memory", options->memory, "KV cache budget per rank, e.g. 24GiB")
      ->check(non_empty());
  plan->add_flag("--json", options->json, "Print the plan as JSON");
  return [plan, options]() { return plan->parsed() ? run_plan(*options) : -1; };
}

}  // namespace attnrt::cli
