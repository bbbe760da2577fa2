// The JSON config: defaults, every field, the `repeat` shorthand, error sources and code-built
// configs. Malformed configs are in config_errors_test.cc, the example files in
// config_examples_test.cc.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"

namespace attnrt {
namespace {

std::vector<std::string> layer_names(const EngineConfig& config) {
  std::vector<std::string> names;
  for (const LayerConfig& layer : config.model.layers) names.push_back(layer.name);
  return names;
}

std::string error_of(const std::string& text) {
  try {
    load_config_text(text, "test.json");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(ConfigDefaults, MinimalConfigGetsTheDocumentedDefaults) {
  const EngineConfig config =
      load_config_text(R"({"model": {"layers": [{"num_heads": 4, "head_size": 16}]}})", "minimal");
  EXPECT_EQ(config.model.name, "model");
  EXPECT_EQ(config.model.max_model_len, 4096);
  EXPECT_EQ(config.model.hidden_size, 0);
  EXPECT_EQ(config.model.vocab_size, 0);
  EXPECT_EQ(config.model.max_encoder_len, 1500);
  ASSERT_EQ(config.model.layers.size(), 1u);
  const LayerConfig& layer = config.model.layers[0];
  EXPECT_EQ(layer.name, "model.layers.0.self_attn");
  EXPECT_EQ(layer.type, AttentionType::full);
  EXPECT_EQ(layer.num_heads, 4);
  EXPECT_EQ(layer.num_kv_heads, 4);  // defaults to num_heads
  EXPECT_EQ(layer.head_size, 16);
  EXPECT_EQ(layer.head_size_v, 16);  // defaults to head_size
  EXPECT_EQ(layer.sliding_window, 0);
  EXPECT_EQ(layer.attention_chunk_size, 0);
  EXPECT_FALSE(layer.shares_kv());
  EXPECT_EQ(layer.backend, "");
  EXPECT_FALSE(layer.draft);

  EXPECT_EQ(config.cache.block_size, 16);
  EXPECT_EQ(config.cache.dtype, DType::bf16);
  EXPECT_EQ(config.cache.layout, KVCacheLayout::LBNHC);
  EXPECT_EQ(config.cache.memory, 4ull << 30);
  EXPECT_FALSE(config.cache.kv_sharing_fast_prefill);
  EXPECT_EQ(config.compilation.cudagraph_mode, CUDAGraphMode::FULL_AND_PIECEWISE);
  EXPECT_TRUE(config.compilation.capture_sizes.empty());
  EXPECT_FALSE(config.compilation.max_capture_size.has_value());
  EXPECT_TRUE(config.compilation.attention_split_piecewise);
  EXPECT_EQ(config.scheduler.max_num_seqs, 128);
  EXPECT_EQ(config.scheduler.max_num_batched_tokens, 2048);
  EXPECT_EQ(config.speculative.num_speculative_tokens, 0);
  EXPECT_FALSE(config.speculative.enable_adaptive_verification);
  EXPECT_EQ(config.parallel.num_ubatches, 1);
  EXPECT_EQ(config.parallel.tensor_parallel_size, 1);
  EXPECT_EQ(config.lora.capture_cases, std::vector<int>{0});
  EXPECT_TRUE(config.backends.empty());
}

TEST(ConfigDefaults, MlaLayerDefaultsToOneLatentHeadAndDeepSeekRank) {
  const EngineConfig config = load_config_text(
      R"({"model": {"layers": [{"type": "mla", "num_heads": 16, "head_size": 576}]}})", "mla");
  const LayerConfig& layer = config.model.layers[0];
  EXPECT_EQ(layer.type, AttentionType::mla);
  EXPECT_EQ(layer.num_kv_heads, 1);
  EXPECT_EQ(layer.head_size_v, 512);  // kv_lora_rank of 576 = 512 + 64 rope dims
}

TEST(ConfigDefaults, ProfileDefaults) {
  const EngineConfig config = load_config_text(
      R"({"model": {"layers": [{"num_heads": 4, "head_size": 16}]}, "backends": [{"name": "P"}]})",
      "p");
  ASSERT_EQ(config.backends.size(), 1u);
  const BackendProfileConfig& profile = config.backends[0];
  EXPECT_EQ(profile.kernel, "");
  EXPECT_EQ(profile.cudagraph_support, AttentionCGSupport::NEVER);
  EXPECT_FALSE(profile.varlen_cudagraph_max_query_len.has_value());
  EXPECT_TRUE(profile.supports_device_cpu_query_lens_mismatch);
  EXPECT_FALSE(profile.supports_batch_invariance);
  EXPECT_EQ(profile.kernel_block_sizes, (std::vector<KernelBlockSizeEntry>{{1, true}}));
  EXPECT_TRUE(profile.kv_cache_layouts.empty());
  EXPECT_TRUE(profile.spec_kinds.empty());
}

constexpr const char* kEveryField = R"({
  "model": {"name": "every-field", "max_model_len": 2048, "hidden_size": 512, "vocab_size": 5000,
            "max_encoder_len": 700,
            "layers": [
              {"name": "a", "type": "sliding_window", "num_heads": 12, "num_kv_heads": 4,
               "head_size": 64, "head_size_v": 32, "sliding_window": 128, "backend": "MY_FA"},
              {"name": "b", "type": "sliding_window", "num_heads": 12, "num_kv_heads": 4,
               "head_size": 64, "head_size_v": 32, "sliding_window": 128, "kv_sharing_target": "a"},
              {"name": "c", "type": "chunked_local", "num_heads": 4, "num_kv_heads": 2,
               "head_size": 16, "attention_chunk_size": 256, "backend": "CPU_REFERENCE"},
              {"name": "d", "type": "mla", "num_heads": 8, "head_size": 96, "head_size_v": 64},
              {"name": "e", "type": "cross", "num_heads": 4, "head_size": 16},
              {"name": "f", "type": "encoder_only", "num_heads": 4, "head_size": 16, "draft": false},
              {"name": "g", "type": "full", "num_heads": 4, "head_size": 16, "draft": true}
            ]},
  "cache": {"block_size": 32, "dtype": "fp8", "layout": "BLHNC", "memory": 123456789,
            "kv_sharing_fast_prefill": true},
  "compilation": {"cudagraph_mode": "PIECEWISE", "capture_sizes": [1, 2, 8], "max_capture_size": 8,
                  "attention_split_piecewise": false},
  "scheduler": {"max_num_seqs": 7, "max_num_batched_tokens": 99},
  "speculative": {"num_speculative_tokens": 2, "enable_adaptive_verification": true},
  "parallel": {"num_ubatches": 2, "tensor_parallel_size": 2},
  "lora": {"capture_cases": [0, 1, 4]},
  "backends": [
    {"name": "MY_FA", "kernel": "CPU_FLASH", "cudagraph_support": "UNIFORM_BATCH",
     "varlen_cudagraph_max_query_len": 4, "supports_device_cpu_query_lens_mismatch": false,
     "supports_batch_invariance": true, "kernel_block_sizes": [16, {"multiple_of": 32}],
     "kv_cache_layouts": ["LBHNC", "BLHNC"], "spec_kinds": ["full", "sliding_window"]},
    {"name": "PLAN_ONLY", "varlen_cudagraph_max_query_len": null}
  ]
})";

TEST(ConfigFields, EveryFieldIsRead) {
  const EngineConfig config = load_config_text(kEveryField, "every-field");
  EXPECT_EQ(config.model.name, "every-field");
  EXPECT_EQ(config.model.max_model_len, 2048);
  EXPECT_EQ(config.model.hidden_size, 512);
  EXPECT_EQ(config.model.vocab_size, 5000);
  EXPECT_EQ(config.model.max_encoder_len, 700);
  ASSERT_EQ(layer_names(config), (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g"}));
  const std::vector<LayerConfig>& layers = config.model.layers;
  EXPECT_EQ(layers[0].type, AttentionType::sliding_window);
  EXPECT_EQ(layers[0].num_heads, 12);
  EXPECT_EQ(layers[0].num_kv_heads, 4);
  EXPECT_EQ(layers[0].head_size, 64);
  EXPECT_EQ(layers[0].head_size_v, 32);
  EXPECT_EQ(layers[0].sliding_window, 128);
  EXPECT_EQ(layers[0].backend, "MY_FA");
  EXPECT_EQ(layers[1].kv_sharing_target, "a");
  EXPECT_EQ(layers[2].type, AttentionType::chunked_local);
  EXPECT_EQ(layers[2].attention_chunk_size, 256);
  EXPECT_EQ(layers[2].backend, "CPU_REFERENCE");
  EXPECT_EQ(layers[3].type, AttentionType::mla);
  EXPECT_EQ(layers[3].num_kv_heads, 1);
  EXPECT_EQ(layers[3].head_size_v, 64);
  EXPECT_EQ(layers[4].type, AttentionType::cross);
  EXPECT_EQ(layers[5].type, AttentionType::encoder_only);
  EXPECT_FALSE(layers[5].draft);
  EXPECT_TRUE(layers[6].draft);

  EXPECT_EQ(config.cache.block_size, 32);
  EXPECT_EQ(config.cache.dtype, DType::fp8_e4m3);
  EXPECT_EQ(config.cache.layout, KVCacheLayout::BLHNC);
  EXPECT_EQ(config.cache.memory, 123456789u);
  EXPECT_TRUE(config.cache.kv_sharing_fast_prefill);
  EXPECT_EQ(config.compilation.cudagraph_mode, CUDAGraphMode::PIECEWISE);
  EXPECT_EQ(config.compilation.capture_sizes, (std::vector<int>{1, 2, 8}));
  EXPECT_EQ(config.compilation.max_capture_size, 8);
  EXPECT_FALSE(config.compilation.attention_split_piecewise);
  EXPECT_EQ(config.scheduler.max_num_seqs, 7);
  EXPECT_EQ(config.scheduler.max_num_batched_tokens, 99);
  EXPECT_EQ(config.speculative.num_speculative_tokens, 2);
  EXPECT_TRUE(config.speculative.enable_adaptive_verification);
  EXPECT_EQ(config.parallel.num_ubatches, 2);
  EXPECT_EQ(config.parallel.tensor_parallel_size, 2);
  EXPECT_EQ(config.lora.capture_cases, (std::vector<int>{0, 1, 4}));

  ASSERT_EQ(config.backends.size(), 2u);
  const BackendProfileConfig& profile = config.backends[0];
  EXPECT_EQ(profile.name, "MY_FA");
  EXPECT_EQ(profile.kernel, "CPU_FLASH");
  EXPECT_EQ(profile.cudagraph_support, AttentionCGSupport::UNIFORM_BATCH);
  EXPECT_EQ(profile.varlen_cudagraph_max_query_len, 4);
  EXPECT_FALSE(profile.supports_device_cpu_query_lens_mismatch);
  EXPECT_TRUE(profile.supports_batch_invariance);
  EXPECT_EQ(profile.kernel_block_sizes,
            (std::vector<KernelBlockSizeEntry>{{16, false}, {32, true}}));
  EXPECT_EQ(profile.kv_cache_layouts,
            (std::vector<KVCacheLayout>{KVCacheLayout::LBHNC, KVCacheLayout::BLHNC}));
  EXPECT_EQ(profile.spec_kinds,
            (std::vector<AttentionType>{AttentionType::full, AttentionType::sliding_window}));
  EXPECT_EQ(config.backends[1].name, "PLAN_ONLY");
  EXPECT_FALSE(config.backends[1].varlen_cudagraph_max_query_len.has_value());
}

TEST(ConfigFields, CacheDtypeAutoIsBf16AndMemoryAcceptsSizeStrings) {
  const EngineConfig config = load_config_text(
      R"({"model": {"layers": [{"num_heads": 4, "head_size": 16}]},
          "cache": {"dtype": "auto", "memory": "1.5GiB"}})",
      "auto");
  EXPECT_EQ(config.cache.dtype, DType::bf16);
  EXPECT_EQ(config.cache.memory, 1610612736u);
}

TEST(ConfigFields, AttentionTypeNamesAreTheJsonSpellings) {
  EXPECT_EQ(attention_type_name(AttentionType::full), "full");
  EXPECT_EQ(attention_type_name(AttentionType::sliding_window), "sliding_window");
  EXPECT_EQ(attention_type_name(AttentionType::chunked_local), "chunked_local");
  EXPECT_EQ(attention_type_name(AttentionType::mla), "mla");
  EXPECT_EQ(attention_type_name(AttentionType::cross), "cross");
  EXPECT_EQ(attention_type_name(AttentionType::encoder_only), "encoder_only");
}

TEST(ConfigFields, FindLayerByName) {
  const EngineConfig config = load_config_text(kEveryField, "every-field");
  ASSERT_NE(config.find_layer("c"), nullptr);
  EXPECT_EQ(config.find_layer("c")->attention_chunk_size, 256);
  EXPECT_EQ(config.find_layer("zzz"), nullptr);
}

TEST(ConfigRepeat, ExpandsInOrderWithPlaceholdersAndNesting) {
  const EngineConfig config = load_config_text(R"({"model": {"layers": [
      {"name": "embed.{i}", "num_heads": 2, "head_size": 8},
      {"repeat": 2, "layers": [
        {"name": "block.{r}.a.{i}", "num_heads": 2, "head_size": 8},
        {"repeat": 2, "layers": [{"name": "inner.{r}.at.{i}", "num_heads": 2, "head_size": 8}]}
      ]},
      {"num_heads": 2, "head_size": 8}
    ]}})",
                                               "repeat");
  EXPECT_EQ(layer_names(config),
            (std::vector<std::string>{"embed.0", "block.0.a.1", "inner.0.at.2", "inner.1.at.3",
                                      "block.1.a.4", "inner.0.at.5", "inner.1.at.6",
                                      "model.layers.7.self_attn"}));
}

TEST(ConfigRepeat, UnnamedLayersAreNamedByTheirExpandedIndex) {
  const EngineConfig config = load_config_text(R"({"model": {"layers": [
      {"name": "first", "num_heads": 2, "head_size": 8},
      {"repeat": 3, "layers": [{"num_heads": 2, "head_size": 8}]}
    ]}})",
                                               "unnamed");
  EXPECT_EQ(layer_names(config),
            (std::vector<std::string>{"first", "model.layers.1.self_attn",
                                      "model.layers.2.self_attn", "model.layers.3.self_attn"}));
}

TEST(ConfigRepeat, KvSharingTargetTakesPlaceholders) {
  const EngineConfig config = load_config_text(R"({"model": {"layers": [
      {"repeat": 2, "layers": [
        {"name": "owner.{r}", "num_heads": 2, "head_size": 8},
        {"name": "sharer.{r}", "num_heads": 2, "head_size": 8, "kv_sharing_target": "owner.{r}"}
      ]}
    ]}})",
                                               "targets");
  ASSERT_EQ(config.model.layers.size(), 4u);
  EXPECT_EQ(config.model.layers[1].kv_sharing_target, "owner.0");
  EXPECT_EQ(config.model.layers[3].name, "sharer.1");
  EXPECT_EQ(config.model.layers[3].kv_sharing_target, "owner.1");
}

TEST(ConfigRepeat, ValidationErrorsIndexTheExpandedList) {
  // Layer 1 (the first sharer) points at layer 3, which comes later.
  const std::string message = error_of(R"({"model": {"layers": [
      {"repeat": 2, "layers": [
        {"num_heads": 2, "head_size": 8},
        {"num_heads": 2, "head_size": 8, "kv_sharing_target": "model.layers.3.self_attn"}
      ]}
    ]}})");
  EXPECT_EQ(
      message.rfind("model.layers[1].kv_sharing_target: \"model.layers.3.self_attn\" must come "
                    "before the current layer \"model.layers.1.self_attn\"",
                    0),
      0u)
      << message;
}

TEST(ConfigSource, ErrorsKeepThePathFirstAndNameTheSource) {
  const std::string message = error_of(R"({"model": {"layers": [{"num_heads": "8"}]}})");
  EXPECT_EQ(message,
            "model.layers[0].num_heads: expected an integer, got a string (\"8\") (in test.json)");
}

TEST(ConfigSource, InvalidJsonNamesThePlaceAndTheSource) {
  const std::string message = error_of(R"({"model": {"layers": [}})");
  EXPECT_EQ(message.rfind("invalid JSON at line 1, column 24, inside model.layers[0]: ", 0), 0u)
      << message;
  EXPECT_TRUE(message.ends_with(" (in test.json)")) << message;
}

TEST(ConfigSource, MissingFileNamesThePath) {
  try {
    load_config_file("/nonexistent/attnrt.json");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("/nonexistent/attnrt.json: cannot open", 0), 0u)
        << error.what();
  }
}

TEST(ConfigValidate, CodeBuiltConfigsUseTheSamePaths) {
  EngineConfig config = default_config();
  EXPECT_NO_THROW(validate_config(config));
  config.model.layers[1].kv_sharing_target = config.model.layers[1].name;
  try {
    validate_config(config);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(
        error.what(),
        "model.layers[1].kv_sharing_target: \"model.layers.1.self_attn\" cannot be the same "
        "as the current layer");
  }
  config = default_config();
  config.cache.block_size = 0;
  EXPECT_THROW(validate_config(config), Error);
}

}  // namespace
}  // namespace attnrt
