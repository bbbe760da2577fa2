// `attnrt plan` on the shipped examples: the JSON of DESIGN.md §3 and the facts it must show.

#include "plan_report.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "attnrt/config/config_loader.h"

namespace attnrt {
namespace {

std::string example(const std::string& name) {
  return std::string(ATTNRT_SOURCE_DIR) + "/examples/" + name;
}

nlohmann::json plan_json(const EngineConfig& config) {
  return cli::plan_to_json(config, plan_kv_cache(config));
}

TEST(PlanReport, EveryExamplePlans) {
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ATTNRT_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const EngineConfig config = load_config_file(entry.path().string());
    const KVCachePlan plan = plan_kv_cache(config);
    const nlohmann::json json = cli::plan_to_json(config, plan);
    EXPECT_GT(json["kv_cache"]["num_blocks"].get<std::int64_t>(), 0);
    EXPECT_FALSE(json["kv_cache"]["groups"].empty());
    EXPECT_FALSE(cli::plan_to_text(config, plan, std::nullopt).empty());
    ++examples;
  }
  EXPECT_GE(examples, 7);
}

TEST(PlanReport, JsonHasTheStableKeys) {
  const nlohmann::json json = plan_json(default_config());
  for (const char* key : {"model", "kv_cache", "bindings"}) EXPECT_TRUE(json.contains(key)) << key;
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
  for (const char* key : {"layer", "buffer", "offset_bytes", "shape", "strides", "dtype",
                          "shares_with"}) {
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
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(binding.at(layers[i].name)["shares_with"].is_null());
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
