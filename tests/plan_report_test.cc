// `attnrt plan` on the shipped examples: the JSON of DESIGN.md §3 and the facts it must show.

#include "plan/plan_report.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"

namespace attnrt {
namespace {

std::string example(const std::string& name) {
  return std::string(ATTNRT_SOURCE_DIR) + "/examples/" + name;
}

AttentionPlan plan_of(const EngineConfig& config) {
  return plan_attention(config, backend_registry_for(config));
}

nlohmann::json plan_json(const EngineConfig& config, const AttentionPlan& plan) {
  return nlohmann::json::parse(plan_json_text(config, plan));
}

nlohmann::json plan_json(const EngineConfig& config) {
  return plan_json(config, plan_of(config));
}

TEST(PlanReport, EveryExamplePlans) {
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ATTNRT_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const EngineConfig config = load_config_file(entry.path().string());
    const AttentionPlan plan = plan_of(config);
    const nlohmann::json json = plan_json(config, plan);
    EXPECT_GT(json["kv_cache"]["num_blocks"].get<std::int64_t>(), 0);
    EXPECT_FALSE(json["kv_cache"]["groups"].empty());
    EXPECT_FALSE(cli::plan_to_text(config, plan, std::nullopt).empty());
    ++examples;
  }
  EXPECT_GE(examples, 7);
}

TEST(PlanReport, JsonHasTheStableKeys) {
  const nlohmann::json json = plan_json(default_config());
  for (const char* key : {"model", "kv_cache", "attention_groups", "cudagraph", "fast_prefill",
                          "checks", "bindings"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  for (const char* key :
       {"backend", "layer_names", "kv_cache_group_id", "num_heads_q", "fast_prefill"}) {
    EXPECT_TRUE(json["attention_groups"][0][0].contains(key)) << key;
  }
  for (const char* key : {"min_cg_support", "min_cg_attn_backend", "requested_mode",
                          "resolved_mode", "messages", "capture_sizes"}) {
    EXPECT_TRUE(json["cudagraph"].contains(key)) << key;
  }
  for (const char* key : {"query_lens_mismatch_unsupported_backend",
                          "varlen_cudagraph_unsupported_backend", "varlen_query_len"}) {
    EXPECT_TRUE(json["checks"].contains(key)) << key;
  }
  EXPECT_TRUE(json["fast_prefill"].contains("enabled"));
  EXPECT_TRUE(json["fast_prefill"].contains("eligible_layers"));
  for (const char* key : {"num_blocks", "block_size", "layout", "bytes_total", "tokens_capacity",
                          "max_concurrency", "groups", "tensors"}) {
    EXPECT_TRUE(json["kv_cache"].contains(key)) << key;
  }
  for (const char* key : {"id", "kind", "layer_names", "page_size_bytes", "kernel_block_size"}) {
    EXPECT_TRUE(json["kv_cache"]["groups"][0].contains(key)) << key;
  }
  for (const char* key : {"size", "layers", "layer_stride", "block_stride", "offset"}) {
    EXPECT_TRUE(json["kv_cache"]["tensors"][0].contains(key)) << key;
  }
  for (const char* key :
       {"layer", "buffer", "offset_bytes", "shape", "strides", "dtype", "shares_with"}) {
    EXPECT_TRUE(json["bindings"][0].contains(key)) << key;
  }
}

TEST(PlanReport, TinyYocoSharesWithTheLastOwningLayerOfItsType) {
  const nlohmann::json json = plan_json(default_config());
  ASSERT_EQ(json["bindings"].size(), 8u);
  std::map<std::string, nlohmann::json> binding;
  for (const auto& b : json["bindings"]) binding[b["layer"].get<std::string>()] = b;
  const auto& layers = default_config().model.layers;
  for (std::size_t i = 4; i < 8; ++i) {
    const nlohmann::json& b = binding.at(layers[i].name);
    const std::string& target = layers[i % 2 == 0 ? 2 : 3].name;
    EXPECT_EQ(b["shares_with"], target);
    EXPECT_EQ(b["offset_bytes"], binding.at(target)["offset_bytes"]);
  }
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_TRUE(binding.at(layers[i].name)["shares_with"].is_null());
}

TEST(PlanReport, Gemma3nKeepsOnlyOwningLayersInTheCacheAndGainsCapacity) {
  const EngineConfig shared = load_config_file(example("gemma-3n-e2b.json"));
  const EngineConfig plain = load_config_file(example("gemma-3n-e2b-no-sharing.json"));
  const nlohmann::json with_sharing = plan_json(shared);
  const nlohmann::json without = plan_json(plain);
  std::set<std::string> in_tensors;
  for (const auto& t : with_sharing["kv_cache"]["tensors"]) {
    for (const auto& name : t["layers"]) in_tensors.insert(name.get<std::string>());
  }
  for (const LayerConfig& layer : shared.model.layers) {
    EXPECT_EQ(in_tensors.count(layer.name), layer.shares_kv() ? 0u : 1u) << layer.name;
  }
  EXPECT_EQ(in_tensors.size(), 20u);
  // 30 layers' worth of budget now serves 20 owning layers: 1.5x the tokens.
  EXPECT_GT(with_sharing["kv_cache"]["tokens_capacity"].get<double>(),
            1.4 * without["kv_cache"]["tokens_capacity"].get<double>());
}

TEST(PlanReport, Gemma2HasTwoGroups) {
  const nlohmann::json json = plan_json(load_config_file(example("gemma-2-9b.json")));
  ASSERT_EQ(json["kv_cache"]["groups"].size(), 2u);
  EXPECT_EQ(json["kv_cache"]["groups"][0]["layer_names"].size(), 21u);
  EXPECT_EQ(json["kv_cache"]["groups"][1]["layer_names"].size(), 21u);
  std::set<std::string> kinds;
  for (const auto& g : json["kv_cache"]["groups"]) kinds.insert(g["kind"].get<std::string>());
  EXPECT_EQ(kinds, (std::set<std::string>{"full", "sliding_window"}));
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// Tensor parallelism plans one rank: heads divided, KV heads replicated below one per rank, and
// the budget is per rank.
TEST(PlanReport, TensorParallelismPlansOneRank) {
  EngineConfig config = load_config_file(example("llama-3-8b.json"));
  config.cache.memory = 1ull << 30;
  config.parallel.tensor_parallel_size = 1;
  const KVCachePlan whole = plan_kv_cache(config);
  config.parallel.tensor_parallel_size = 4;
  const KVCachePlan rank4 = plan_kv_cache(config);
  config.parallel.tensor_parallel_size = 16;
  const KVCachePlan rank16 = plan_kv_cache(config);

  EXPECT_EQ(whole.forward_context.layers()[0].num_heads(), 32);
  EXPECT_EQ(rank4.forward_context.layers()[0].num_heads(), 8);
  EXPECT_EQ(rank4.forward_context.layers()[0].num_kv_heads(), 2);
  EXPECT_EQ(rank16.forward_context.layers()[0].num_heads(), 2);
  EXPECT_EQ(rank16.forward_context.layers()[0].num_kv_heads(), 1);  // 8 KV heads, 16 ranks
  // 16 tokens × 8 KV heads × (128 + 128) × bf16 = 64 KiB per page on one rank; 16 KiB on four.
  const KVCacheSpec& spec4 = rank4.kv_cache_config.kv_cache_groups[0].kv_cache_spec;
  EXPECT_EQ(whole.kv_cache_config.kv_cache_groups[0].kv_cache_spec.page_size_bytes(), 65536);
  EXPECT_EQ(spec4.page_size_bytes(), 16384);
  EXPECT_EQ(rank4.kv_cache_config.num_blocks, (1 << 30) / (16384 * 32));
  EXPECT_EQ(rank4.kv_cache_config.num_blocks, 4 * whole.kv_cache_config.num_blocks);
  EXPECT_EQ(rank16.kv_cache_config.num_blocks, rank4.kv_cache_config.num_blocks * 2);
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// A FlashInfer-profile drafter behind a FLASH_ATTN target: the drafter limits the runner-wide
// graph mode, while the checks scoped to the target layers pass.
TEST(PlanReport, DrafterLimitsTheModeWhileTargetChecksPass) {
  const nlohmann::json json = plan_json(load_config_file(example("draft-flashinfer.json")));
  EXPECT_EQ(json["cudagraph"]["min_cg_support"], "UNIFORM_SINGLE_TOKEN_DECODE");
  EXPECT_EQ(json["cudagraph"]["min_cg_attn_backend"], "FLASHINFER");
  EXPECT_EQ(json["cudagraph"]["requested_mode"], "FULL_AND_PIECEWISE");
  EXPECT_EQ(json["cudagraph"]["resolved_mode"], "PIECEWISE");
  ASSERT_EQ(json["cudagraph"]["messages"].size(), 1u);
  EXPECT_EQ(json["cudagraph"]["messages"][0],
            "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for attention "
            "backend FLASHINFER (support: AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); "
            "setting cudagraph_mode=PIECEWISE");
  EXPECT_TRUE(json["checks"]["query_lens_mismatch_unsupported_backend"].is_null());
  EXPECT_TRUE(json["checks"]["varlen_cudagraph_unsupported_backend"].is_null());
  EXPECT_EQ(json["checks"]["varlen_query_len"], 4);
  const nlohmann::json& groups = json["attention_groups"][0];
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0]["backend"], "FLASH_ATTN");
  EXPECT_EQ(groups[1]["backend"], "FLASHINFER");
}

TEST(PlanReport, FastPrefillLayersAreTheTrailingSharingLayers) {
  const nlohmann::json json = plan_json(default_config());
  EXPECT_TRUE(json["fast_prefill"]["enabled"].get<bool>());
  const auto& layers = default_config().model.layers;
  EXPECT_EQ(
      json["fast_prefill"]["eligible_layers"],
      (std::vector<std::string>{layers[4].name, layers[5].name, layers[6].name, layers[7].name}));
  for (const auto& group : json["attention_groups"][0]) {
    const bool wrapped = group["backend"].get<std::string>().starts_with("FastPrefill");
    EXPECT_EQ(group["fast_prefill"].get<bool>(), wrapped);
  }
}

}  // namespace
}  // namespace attnrt
