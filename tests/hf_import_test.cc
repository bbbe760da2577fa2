// import_hf_model over every family it maps: the real fixtures of tests/data/hf/ and small
// configs written here for the families without one, each checked for layer kinds, counts, heads,
// KV heads per rank, head sizes, windows, sharing targets and MLA widths, and the notes' traps.

#include "attnrt/config/hf_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attnrt/attention/attention_layer.h"
#include "attnrt/core/error.h"

namespace attnrt {
namespace {

using nlohmann::json;

json fixture(const std::string& name) {
  std::ifstream file(std::string(ATTNRT_SOURCE_DIR) + "/tests/data/hf/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return parse_hf_config_text(text.str());
}

HfImport import(const json& config, EngineArgs args = {}) {
  return import_hf_model(config, ImportOptions{args});
}

std::string import_error(const json& config, EngineArgs args = {}) {
  try {
    import(config, args);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

int count_of(const HfImport& hf, AttentionType type) {
  int count = 0;
  for (const LayerConfig& layer : hf.config.model.layers) count += layer.type == type ? 1 : 0;
  return count;
}

// KV heads of `layer` on one rank of `tp` (the plan's per-rank division).
int kv_per_rank(const LayerConfig& layer, int tp) {
  return AttentionLayer(layer, tp).num_kv_heads();
}

TEST(HfImportTest, Llama31FromItsConfigDerivesTheHeadSizeAndKeepsGqa) {
  const HfImport hf = import(fixture("llama-3.1-8b-instruct.json"));
  const EngineConfig& c = hf.config;
  ASSERT_EQ(c.model.layers.size(), 32u);
  EXPECT_EQ(count_of(hf, AttentionType::full), 32);
  const LayerConfig& first = c.model.layers.front();
  EXPECT_EQ(first.name, "model.layers.0.self_attn.attn");
  EXPECT_EQ(first.num_heads, 32);
  EXPECT_EQ(first.num_kv_heads, 8);
  EXPECT_EQ(first.head_size, 128);           // hidden 4096 / 32 heads: no head_dim in the file
  EXPECT_EQ(c.model.max_model_len, 131072);  // rope_type llama3 does not scale the length
  EXPECT_EQ(hf.max_len_source, "max_position_embeddings");
  EXPECT_EQ(c.cache.dtype, DType::bf16);
  EXPECT_EQ(kv_per_rank(first, 1), 8);
  EXPECT_EQ(kv_per_rank(first, 2), 4);
  EXPECT_EQ(kv_per_rank(first, 8), 1);
  EXPECT_EQ(kv_per_rank(first, 16), 1);  // replicated: more ranks than KV heads
  ASSERT_EQ(hf.kinds.size(), 1u);
  EXPECT_EQ(hf.kinds[0].count, 32);
}

TEST(HfImportTest, MixtralNullSlidingWindowIsFullAttention) {
  const HfImport hf = import(fixture("mixtral-8x7b-v0.1.json"));
  EXPECT_EQ(count_of(hf, AttentionType::full), 32);
  EXPECT_EQ(hf.config.model.layers[0].head_size, 128);  // head_dim null: derived
  EXPECT_EQ(hf.config.model.max_model_len, 32768);
}

TEST(HfImportTest, Qwen3TakesItsHeadDimAndIgnoresTheWindowWithoutUseSlidingWindow) {
  const HfImport hf = import(fixture("qwen3-14b.json"));
  ASSERT_EQ(hf.config.model.layers.size(), 40u);
  EXPECT_EQ(count_of(hf, AttentionType::full), 40);
  EXPECT_EQ(hf.config.model.layers[0].head_size, 128);
  EXPECT_EQ(hf.config.model.layers[0].num_kv_heads, 8);
  EXPECT_EQ(hf.config.model.max_model_len, 40960);
}

TEST(HfImportTest, DeepSeekV2LiteIsMlaWithA576WideLatentReplicatedOnEveryRank) {
  const HfImport hf = import(fixture("deepseek-v2-lite.json"));
  ASSERT_EQ(hf.config.model.layers.size(), 27u);
  const LayerConfig& layer = hf.config.model.layers[0];
  EXPECT_EQ(layer.type, AttentionType::mla);
  EXPECT_EQ(layer.num_heads, 16);
  EXPECT_EQ(layer.num_kv_heads, 1);
  EXPECT_EQ(layer.head_size, 576);    // kv_lora_rank 512 + qk_rope_head_dim 64, not head_dim
  EXPECT_EQ(layer.head_size_v, 512);  // kv_lora_rank
  EXPECT_EQ(kv_per_rank(layer, 8), 1);
  EXPECT_EQ(hf.config.model.max_model_len, 163840);  // yarn: 4096 x factor 40
  EXPECT_NE(hf.max_len_source.find("rope_scaling.factor (yarn)"), std::string::npos);
}

TEST(HfImportTest, Gemma4HasPerTypeHeadSizesAndKvHeadsAndKEqualsVOnFullLayers) {
  const HfImport hf = import(fixture("gemma-4-26b-a4b.json"));
  const auto& layers = hf.config.model.layers;
  ASSERT_EQ(layers.size(), 30u);
  EXPECT_EQ(count_of(hf, AttentionType::sliding_window), 25);
  EXPECT_EQ(count_of(hf, AttentionType::full), 5);
  EXPECT_EQ(layers[0].name, "language_model.model.layers.0.self_attn.attn");  // text_config
  EXPECT_EQ(layers[0].sliding_window, 1024);
  EXPECT_EQ(layers[0].head_size, 256);
  EXPECT_EQ(layers[0].num_kv_heads, 8);
  EXPECT_EQ(layers[5].type, AttentionType::full);
  EXPECT_EQ(layers[5].head_size, 512);   // global_head_dim
  EXPECT_EQ(layers[5].num_kv_heads, 2);  // num_global_key_value_heads, since attention_k_eq_v
  EXPECT_EQ(hf.model_type, "gemma4_text");
  ASSERT_EQ(hf.v_copies_k_layers.size(), 5u);
  EXPECT_EQ(hf.v_copies_k_layers[0], "language_model.model.layers.5.self_attn.attn");
  EXPECT_EQ(hf.config.model.max_model_len, 262144);
}

TEST(HfImportTest, Gemma4WithoutKEqualsVKeepsTheLocalKvHeadCount) {
  json config = fixture("gemma-4-26b-a4b.json");
  config["text_config"]["attention_k_eq_v"] = false;
  const HfImport hf = import(config);
  EXPECT_EQ(hf.config.model.layers[5].num_kv_heads, 8);
  EXPECT_TRUE(hf.v_copies_k_layers.empty());
}

TEST(HfImportTest, UnmappedHybridModelsAreRefusedByName) {
  json config = json::parse(R"({"model_type": "zamba2", "num_hidden_layers": 2})");
  EXPECT_NE(import_error(config).find("zamba2: a hybrid model whose state layers the importer does "
                                      "not map"),
            std::string::npos);
}

TEST(HfImportTest, PythonLiteralsReadAsTheDoublesTheyName) {
  const json value = parse_hf_config_text(
      R"({"a": Infinity, "b": -Infinity, "c": NaN, "d": "Infinity", "e": [NaN, 1]})");
  EXPECT_TRUE(std::isinf(value["a"].get<double>()) && value["a"].get<double>() > 0);
  EXPECT_TRUE(std::isinf(value["b"].get<double>()) && value["b"].get<double>() < 0);
  EXPECT_TRUE(std::isnan(value["c"].get<double>()));
  EXPECT_EQ(value["d"], "Infinity");  // inside a string it stays text
  EXPECT_TRUE(std::isnan(value["e"][0].get<double>()));
  EXPECT_THROW(parse_hf_config_text(R"({"a": Infinityx})"), Error);
}

TEST(HfImportTest, EngineArgumentsOverrideTheFile) {
  EngineArgs args;
  args.max_model_len = 8192;
  args.tensor_parallel_size = 2;
  args.block_size = 32;
  args.kv_cache_dtype = "fp8";
  args.kv_sharing_fast_prefill = true;
  const HfImport hf = import(fixture("llama-3.1-8b-instruct.json"), args);
  EXPECT_EQ(hf.config.model.max_model_len, 8192);
  EXPECT_EQ(hf.config.parallel.tensor_parallel_size, 2);
  EXPECT_EQ(hf.config.cache.block_size, 32);
  EXPECT_EQ(hf.config.cache.dtype, DType::fp8_e4m3);
  EXPECT_TRUE(hf.config.cache.kv_sharing_fast_prefill);
}

TEST(HfImportTest, MaxModelLenBeyondTheDerivedOneIsRefusedAsVllmDoes) {
  EngineArgs args;
  args.max_model_len = 131073;
  const std::string error = import_error(fixture("llama-3.1-8b-instruct.json"), args);
  EXPECT_NE(error.find("User-specified max_model_len (131073) is greater than the derived "
                       "max_model_len (max_position_embeddings=131072"),
            std::string::npos)
      << error;
}

TEST(HfImportTest, TensorParallelThatSplitsNoHeadsIsRefusedNamingTheFlag) {
  EngineArgs args;
  args.tensor_parallel_size = 3;
  const std::string error = import_error(fixture("llama-3.1-8b-instruct.json"), args);
  EXPECT_NE(error.find("--tensor-parallel-size"), std::string::npos) << error;
}

TEST(HfImportTest, AutoCacheDtypeIsTheModelsDtype) {
  json config = fixture("llama-3.1-8b-instruct.json");
  config["torch_dtype"] = "float16";
  EngineArgs args;
  args.kv_cache_dtype = "auto";
  EXPECT_EQ(import(config, args).config.cache.dtype, DType::f16);
  args.kv_cache_dtype = "fp8_e5m2";
  EXPECT_NE(import_error(config, args).find("fp8_e5m2"), std::string::npos);
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// KV heads per rank for TP 1, 2 and 8 on every fixture: split while there are enough, then one
// replicated head; MLA's latent is one head on every rank.
TEST(HfImportTest, KvHeadsPerRankAcrossTensorParallelSizes) {
  struct Case {
    std::string file;
    std::size_t layer;
    int tp1, tp2, tp8;
  };
  for (const Case& c :
       {Case{"llama-3.1-8b-instruct.json", 0, 8, 4, 1}, Case{"mixtral-8x7b-v0.1.json", 0, 8, 4, 1},
        Case{"qwen3-14b.json", 0, 8, 4, 1}, Case{"deepseek-v2-lite.json", 0, 1, 1, 1},
        Case{"gemma-4-26b-a4b.json", 0, 8, 4, 1},  // sliding: 8 KV heads
        Case{"gemma-4-26b-a4b.json", 5, 2, 1, 1},  // full: 2 global KV heads
        Case{"mistral-7b-v0.1.json", 0, 8, 4, 1}}) {
    const LayerConfig layer = import(fixture(c.file)).config.model.layers.at(c.layer);
    EXPECT_EQ(kv_per_rank(layer, 1), c.tp1) << c.file;
    EXPECT_EQ(kv_per_rank(layer, 2), c.tp2) << c.file;
    EXPECT_EQ(kv_per_rank(layer, 8), c.tp8) << c.file;
  }
}

TEST(HfImportTest, DeepSeekMtpLayersAreNotTargetLayers) {
  json config = fixture("deepseek-v2-lite.json");
  config["num_nextn_predict_layers"] = 1;
  const HfImport hf = import(config);
  EXPECT_EQ(hf.config.model.layers.size(), 27u);
  EXPECT_NE(std::ranges::find_if(hf.notes,
                                 [](const std::string& note) {
                                   return note.starts_with("num_nextn_predict_layers 1");
                                 }),
            hf.notes.end());
}

}  // namespace
}  // namespace attnrt
