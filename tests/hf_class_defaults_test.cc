// transformers' class defaults, family by family (src/config/hf/hf_class_defaults.cc): a minimal
// config.json (model_type, architectures and nothing the class has a default for) plans as the
// configuration class and vLLM's rules say.

#include "config/hf/hf_class_defaults.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnrt/config/hf_import.h"
#include "attnrt/core/error.h"

namespace attnrt {
namespace {

using nlohmann::json;

struct Expected {
  std::string model_type;
  json extra;  // fields the class has no default for
  int layers;  // attention layers planned
  int heads, kv_heads, head_size, max_model_len;
  int sliding_layers, window;
};

int count_sliding(const EngineConfig& config) {
  int n = 0;
  for (const LayerConfig& layer : config.model.layers) {
    n += layer.type == AttentionType::sliding_window ? 1 : 0;
  }
  return n;
}

// Values: the class defaults (the tables' sources), the family rule of docs/hf-import.md.
const std::vector<Expected>& cases() {
  static const std::vector<Expected> all = {
      {"llama", json::object(), 32, 32, 32, 128, 2048, 0, 0},
      {"mistral", json::object(), 32, 32, 8, 128, 131072, 32, 4096},
      {"mixtral", json::object(), 32, 32, 8, 128, 131072, 0, 0},
      {"phi3", json::object(), 32, 32, 32, 96, 4096, 0, 0},
      {"qwen2", json::object(), 32, 32, 32, 128, 32768, 0, 0},
      {"qwen2_moe", json::object(), 24, 16, 16, 128, 32768, 0, 0},
      {"qwen3", json::object(), 32, 32, 32, 128, 32768, 0, 0},
      {"qwen3_moe", json::object(), 24, 32, 4, 64, 32768, 0, 0},
      {"gemma2", json::object(), 26, 8, 4, 256, 8192, 13, 4096},
      {"gemma3_text", json::object(), 26, 8, 4, 256, 131072, 22, 4096},
      {"gemma3n_text", json::object(), 35, 8, 2, 256, 32768, 28, 512},
      {"cohere2", json::object(), 40, 64, 64, 128, 8192, 30, 4096},
      {"gemma4_text", json::object(), 30, 8, 4, 256, 131072, 25, 512},
      {"gpt_oss", json::object(), 36, 64, 8, 64, 131072, 18, 128},
      {"deepseek_v2", json::object(), 32, 32, 1, 576, 2048, 0, 0},
      {"deepseek_v3", json::object(), 61, 128, 1, 576, 4096, 0, 0},
      {"kimi_k2", json::object(), 61, 128, 1, 576, 4096, 0, 0},
      {"glm4", json::object(), 40, 32, 2, 128, 131072, 0, 0},
      {"minimax_m2", json::object(), 62, 48, 8, 128, 196608, 0, 0},
      {"exaone4", json::object(), 32, 32, 32, 128, 2048, 24, 4096},
      {"olmo2", json::object(), 32, 32, 32, 128, 2048, 0, 0},
      {"olmo3", json::object(), 32, 32, 32, 128, 2048, 24, 4096},
      {"smollm3", json::object(), 36, 16, 4, 128, 32768, 0, 0},
      {"granite", json::object(), 32, 32, 32, 128, 2048, 0, 0},
      {"granitemoe", json::object(), 32, 32, 32, 128, 2048, 0, 0},
      {"ernie4_5", json::object(), 18, 16, 2, 128, 131072, 0, 0},
      {"ernie4_5_moe", json::object(), 28, 20, 4, 128, 131072, 0, 0},
      {"hunyuan_v1_dense", json::object(), 32, 32, 32, 128, 2048, 0, 0},
      {"hunyuan_v1_moe", json::object(), 32, 32, 32, 128, 2048, 0, 0},
      {"seed_oss", json::object(), 64, 80, 8, 128, 524288, 0, 0},
      // Llama 4 plans chunked layers, not sliding ones: counted apart below.
      {"llama4_text", json::object(), 48, 40, 8, 128, 131072, 0, 0},
  };
  return all;
}

TEST(HfClassDefaults, AMinimalConfigPlansAsTheClassDefaultsSay) {
  for (const Expected& want : cases()) {
    SCOPED_TRACE(want.model_type);
    json config = {{"model_type", want.model_type}, {"architectures", {"TestForCausalLM"}}};
    config.update(want.extra);
    const HfImport hf = import_hf_model(config);
    const EngineConfig& c = hf.config;
    ASSERT_EQ(static_cast<int>(c.model.layers.size()), want.layers);
    const LayerConfig& first = c.model.layers.front();
    EXPECT_EQ(first.num_heads, want.heads);
    EXPECT_EQ(first.num_kv_heads, want.kv_heads);
    EXPECT_EQ(first.head_size, want.head_size);
    EXPECT_EQ(c.model.max_model_len, want.max_model_len);
    EXPECT_EQ(count_sliding(c), want.sliding_layers);
    for (const LayerConfig& layer : c.model.layers) {
      if (layer.type == AttentionType::sliding_window) {
        EXPECT_EQ(layer.sliding_window, want.window);
      }
    }
    // The import says which fields the class filled in, and from where.
    const bool noted = std::ranges::any_of(
        hf.notes, [](const std::string& note) { return note.starts_with("class defaults ("); });
    EXPECT_TRUE(noted);
  }
}

TEST(HfClassDefaults, Llama4ChunksEveryRopeLayerWithTheDefaultChunk) {
  const HfImport hf = import_hf_model({{"model_type", "llama4_text"}});
  int chunked = 0;
  for (const LayerConfig& layer : hf.config.model.layers) {
    if (layer.type != AttentionType::chunked_local) continue;
    ++chunked;
    EXPECT_EQ(layer.attention_chunk_size, 8192);
  }
  EXPECT_EQ(chunked, 36);  // 48 layers, every 4th NoPE and global
}

TEST(HfClassDefaults, Gemma3WithoutLengthOrHeadFieldsServesAt131072) {
  // The config: a Gemma 3 text_config with a linear RoPE factor and none of the fields
  // Gemma3TextConfig fills in. vLLM never applies the factor to Gemma 3.
  const json config = {{"model_type", "gemma3"},
                       {"architectures", {"Gemma3ForConditionalGeneration"}},
                       {"text_config",
                        {{"model_type", "gemma3_text"},
                         {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}}}};
  const HfImport hf = import_hf_model(config);
  EXPECT_EQ(hf.derived_max_model_len, 131072);
  EXPECT_EQ(hf.config.model.max_model_len, 131072);
  const LayerConfig& first = hf.config.model.layers.front();
  EXPECT_EQ(first.name, "language_model.model.layers.0.self_attn.attn");
  EXPECT_EQ(first.num_heads, 8);
  EXPECT_EQ(first.num_kv_heads, 4);
  EXPECT_EQ(first.head_size, 256);
  // A wrapper without any text_config builds the text class's defaults.
  const HfImport bare = import_hf_model({{"model_type", "gemma3"}});
  EXPECT_EQ(bare.model_type, "gemma3_text");
  EXPECT_EQ(bare.config.model.layers.size(), 26u);
  // --max-model-len may now ask for the whole 131072.
  ImportOptions options;
  options.args.max_model_len = 131072;
  EXPECT_EQ(import_hf_model(config, options).config.model.max_model_len, 131072);
}

TEST(HfClassDefaults, RopeFactorsOfOtherFamiliesStillScaleTheLength) {
  const json llama = {{"model_type", "llama"},
                      {"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}}};
  EXPECT_EQ(import_hf_model(llama).derived_max_model_len, 8192);  // 2048 x 4
  // transformers 5 writes rope_parameters; per layer type, the last factor wins.
  const json v5 = {
      {"model_type", "llama"},
      {"rope_parameters",
       {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}}}};
  EXPECT_EQ(import_hf_model(v5).derived_max_model_len, 16384);
}

TEST(HfClassDefaults, LongRopeServesTheOriginalLengthByDefault) {
  const json phi3 = {
      {"model_type", "phi3"},
      {"max_position_embeddings", 131072},
      {"original_max_position_embeddings", 4096},
      {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}}}};
  const HfImport hf = import_hf_model(phi3);
  EXPECT_EQ(hf.derived_max_model_len, 131072);
  EXPECT_EQ(hf.config.model.max_model_len, 4096);
  ImportOptions options;
  options.args.max_model_len = 131072;
  EXPECT_EQ(import_hf_model(phi3, options).config.model.max_model_len, 131072);
}

TEST(HfClassDefaults, ExplicitNullsAndGivenValuesWin) {
  json mistral = {{"model_type", "mistral"}, {"sliding_window", nullptr}};
  EXPECT_EQ(count_sliding(import_hf_config(mistral)), 0);
  json gemma = {{"model_type", "gemma3_text"}, {"num_key_value_heads", 1}};
  EXPECT_EQ(import_hf_config(gemma).model.layers.front().num_kv_heads, 1);
}

TEST(HfClassDefaults, EveryTableParsesAndFillsAnEmptyConfig) {
  for (const std::string_view type : detail::class_default_model_types()) {
    SCOPED_TRACE(type);
    json object = json::object();
    const detail::HfClassDefaults filled = detail::apply_class_defaults(object, type);
    EXPECT_FALSE(filled.filled.empty());
    EXPECT_NE(filled.source.find(".py: "), std::string_view::npos);
    EXPECT_TRUE(object.contains("vocab_size"));
  }
}

TEST(HfClassDefaults, FamiliesThatNeedAFieldNameIt) {
  const auto error_of = [](const json& config) -> std::string {
    try {
      import_hf_model(config);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  // GLM-4.5's class has no head_dim; 4096 / 96 does not divide, and vLLM would floor it.
  EXPECT_NE(error_of({{"model_type", "glm4_moe"}}).find("glm4_moe: hidden_size"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"model_type", "seed_oss"}, {"head_dim", nullptr}}).find("seed_oss: head_dim"),
      std::string::npos);
  EXPECT_NE(error_of({{"model_type", "hunyuan_v1_dense"}, {"use_cla", true}}).find("use_cla"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
