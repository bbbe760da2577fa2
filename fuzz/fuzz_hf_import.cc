// fuzz_hf_import: config.json text → parse_hf_config_text → import_hf_model → the KV cache plan
// and the weight count, as `attnrt plan CONFIG.json --device-memory ...` runs them, under random
// engine arguments taken from the input's last bytes. attnrt::Error is the expected answer to bad
// input; any other exception, a crash, a leak or a hang is a finding.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "attnrt/config/hf_import.h"
#include "attnrt/config/hf_weights.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/kv_cache_plan.h"
#include "fuzz_support.h"

namespace {

// The input's first byte picks engine arguments, so that TP splits, fp8 caches, short lengths
// and block sizes meet the importer's layers; the rest is the config text.
attnrt::EngineArgs engine_args_of(std::uint8_t choice) {
  attnrt::EngineArgs args;
  constexpr int kTensorParallel[] = {1, 2, 3, 8};
  args.tensor_parallel_size = kTensorParallel[choice & 3];
  if (choice & 4) args.max_model_len = 4096;
  if (choice & 8) args.kv_cache_dtype = "fp8";
  if (choice & 16) args.block_size = 64;
  if (choice & 32) args.num_gpu_blocks_override = 1000;
  args.memory = std::uint64_t{1} << 30;
  return args;
}

// Importing is linear in the layers (100 000 take 0.4 s in release), but instrumented a large
// model runs past libFuzzer's timeout; the CLI suite plans 100 000-layer models in every build.
constexpr std::int64_t kMaxFuzzedLayers = 2000;

bool too_many_layers(const nlohmann::json& json) {
  for (const nlohmann::json* object :
       {&json, json.contains("text_config") ? &json["text_config"] : nullptr}) {
    if (object == nullptr || !object->is_object()) continue;
    for (const char* key : {"num_hidden_layers", "encoder_layers", "decoder_layers"}) {
      const auto it = object->find(key);
      if (it != object->end() && it->is_number() && it->get<double>() > kMaxFuzzedLayers) {
        return true;
      }
    }
  }
  return false;
}

void import_and_plan(std::uint8_t choice, std::string_view text) {
  const nlohmann::json json = attnrt::parse_hf_config_text(text);
  if (!attnrt::is_hf_config(json) || too_many_layers(json)) return;
  const attnrt::HfImport hf = attnrt::import_hf_model(json, {engine_args_of(choice)});
  attnrt::fuzz::check(!hf.config.model.layers.empty(), "an import without layers");
  const attnrt::KVCachePlan plan = attnrt::plan_kv_cache_without_views(hf.config);
  attnrt::fuzz::check(plan.capacity.estimated_max_model_len <= hf.config.model.max_model_len,
                      "estimated max model length above max_model_len");
  const attnrt::WeightBreakdown weights =
      attnrt::estimate_hf_weight_bytes(json, hf.config.parallel.tensor_parallel_size);
  attnrt::fuzz::check(weights.total_bytes > 0 || weights.total_parameters == 0,
                      "weights without bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    import_and_plan(data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  } catch (const attnrt::Error&) {
    // Bad input, reported the way the CLI reports it.
  } catch (const std::exception& error) {
    attnrt::fuzz::unexpected_exception(error);
  }
  return 0;
}
