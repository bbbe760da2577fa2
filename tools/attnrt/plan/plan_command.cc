// `attnrt plan [CONFIG] [vLLM engine args] [--memory SIZE] [--json]`: explains the KV cache plan
// of an attnrt config, a Hugging Face config.json or a model folder.

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/config/model_source.h"
#include "attnrt/core/error.h"
#include "bf16_products_option.h"
#include "cli_checks.h"
#include "commands.h"
#include "engine_arg_options.h"
#include "plan/plan_report.h"

namespace attnrt::cli {
namespace {

struct PlanOptions {
  std::string config_path;
  EngineArgOptions engine_args;
  std::string bf16_products;  // "auto", "dot", "f32" or empty: CPU_FLASH's default (auto)
  bool json = false;
};

EngineConfig without_kv_sharing(EngineConfig config) {
  for (LayerConfig& layer : config.model.layers) layer.kv_sharing_target.clear();
  return config;
}

int run_plan(const PlanOptions& options) {
  LoadedModel model = load_model(options.config_path, to_engine_args(options.engine_args));
  const std::optional<DeviceBudget> device = apply_device_budget(model, options.engine_args);
  const EngineConfig& config = model.config;
  const PlanExtras extras{model.hf ? &*model.hf : nullptr, device ? &*device : nullptr};
  const BackendRegistry registry = make_backend_registry(
      config, make_builtin_backends(cpu_flash_options_with(options.bf16_products)));
  const AttentionPlan plan = plan_attention(config, registry);
  const int status = plan.startup.starts() ? 0 : kExitVllmWouldRefuse;
  if (!plan.startup.starts()) {  // also on stderr, for scripts that read only the JSON
    std::cerr << "attnrt: vLLM would refuse to start: " << plan.startup.reasons.front() << '\n';
  }
  if (options.json) {
    std::cout << plan_json_text(config, plan, extras, 2) << '\n';
    return status;
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
  std::cout << plan_to_text(config, plan, without_sharing, extras);
  return status;
}

}  // namespace

std::function<int()> add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* plan =
      app.add_subcommand("plan", "Explain the KV cache and attention plan of a config");
  plan->add_option("CONFIG", options->config_path,
                   "An attnrt config, a Hugging Face config.json or a model folder; the embedded "
                   "tiny-yoco default if omitted")
      ->check(non_empty());
  add_engine_arg_options(*plan, options->engine_args);
  add_bf16_products_option(*plan, options->bf16_products);
  plan->add_flag("--json", options->json, "Print the plan as JSON");
  return [plan, options]() { return plan->parsed() ? run_plan(*options) : -1; };
}

}  // namespace attnrt::cli
