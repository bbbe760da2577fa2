// fuzz_config_plan: config text → load_config_text → plan_attention → the `attnrt plan` reports
// (JSON and text), as `attnrt plan CONFIG` runs them. attnrt::Error is the expected answer to bad
// input; any other exception, a crash, a leak or a hang is a finding.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attention_plan.h"
#include "fuzz_support.h"
#include "plan/plan_report.h"

namespace {

// The capacity `attnrt plan` compares against when the model shares KV (plan_command.cc).
attnrt::EngineConfig without_kv_sharing(attnrt::EngineConfig config) {
  for (attnrt::LayerConfig& layer : config.model.layers) layer.kv_sharing_target.clear();
  return config;
}

void plan_and_report(std::string_view text) {
  const attnrt::EngineConfig config = attnrt::load_config_text(text, "<fuzz>");
  // Planning is linear in the layers, but instrumented it costs ~0.4 ms a layer (a 4577-layer plan
  // took 1.8 s alone and 12 s on a machine busy compiling, past libFuzzer's 10 s timeout); the CLI
  // suite's ExtremeValid cases plan 100 000-layer models in every build.
  constexpr std::size_t kMaxFuzzedLayers = 2000;
  if (config.model.layers.size() > kMaxFuzzedLayers) return;
  const attnrt::BackendRegistry registry = attnrt::backend_registry_for(config);
  const attnrt::AttentionPlan plan = attnrt::plan_attention(config, registry);
  const std::string json = attnrt::plan_json_text(config, plan, {}, 2);
  std::optional<attnrt::KVCachePlan> without_sharing;
  if (!plan.kv.shared_layers.empty()) {
    without_sharing = attnrt::plan_kv_cache(without_kv_sharing(config));
  }
  const std::string text_report = attnrt::cli::plan_to_text(config, plan, without_sharing);
  attnrt::fuzz::check(!json.empty() && !text_report.empty(), "plan report is empty");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    plan_and_report(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const attnrt::Error&) {
    // Bad input, reported the way the CLI reports it.
  } catch (const std::exception& error) {
    attnrt::fuzz::unexpected_exception(error);
  }
  return 0;
}
