// import_hf_model on configs written for the families without a fixture in tests/data/hf/: each
// family's own rule (windows, patterns, chunks, sharing, encoder-decoder) and the traps of
// docs/hf-import.md, plus the refusals, each naming the model_type and the field.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attnrt/config/hf_import.h"
#include "attnrt/core/error.h"

namespace attnrt {
namespace {

using nlohmann::json;

json base(const std::string& model_type, int layers, int heads, int kv, int hidden) {
  return {{"architectures", {"TestForCausalLM"}},
          {"model_type", model_type},
          {"num_hidden_layers", layers},
          {"num_attention_heads", heads},
          {"num_key_value_heads", kv},
          {"hidden_size", hidden},
          {"vocab_size", 32000},
          {"max_position_embeddings", 8192},
          {"torch_dtype", "bfloat16"}};
}

std::vector<AttentionType> types_of(const EngineConfig& config) {
  std::vector<AttentionType> types;
  for (const LayerConfig& layer : config.model.layers) types.push_back(layer.type);
  return types;
}

std::string error_of(const json& config) {
  try {
    import_hf_model(config);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

constexpr AttentionType F = AttentionType::full;
constexpr AttentionType S = AttentionType::sliding_window;
constexpr AttentionType C = AttentionType::chunked_local;

TEST(HfImportFamiliesTest, MistralSlidesEveryLayerWithTheDefaultWindowWhenAbsent) {
  const EngineConfig absent = import_hf_config(base("mistral", 4, 32, 8, 4096));
  EXPECT_EQ(types_of(absent), (std::vector{S, S, S, S}));
  EXPECT_EQ(absent.model.layers[0].sliding_window, 4096);  // transformers' MistralConfig default
  json nemo = base("mistral", 4, 32, 8, 5120);
  nemo["sliding_window"] = nullptr;
  nemo["head_dim"] = 128;  // 5120 / 32 would be 160
  const EngineConfig c = import_hf_config(nemo);
  EXPECT_EQ(types_of(c), (std::vector{F, F, F, F}));
  EXPECT_EQ(c.model.layers[0].head_size, 128);
}

TEST(HfImportFamiliesTest, Qwen2IgnoresHeadDimAndSlidesFromMaxWindowLayers) {
  json config = base("qwen2", 4, 16, 4, 2048);
  config["head_dim"] = 64;
  config["use_sliding_window"] = true;
  config["sliding_window"] = 1024;
  config["max_window_layers"] = 2;
  const EngineConfig c = import_hf_config(config);
  EXPECT_EQ(c.model.layers[0].head_size, 128);  // qwen2.py: hidden_size / heads, always
  EXPECT_EQ(types_of(c), (std::vector{F, F, S, S}));
  EXPECT_EQ(c.model.layers[2].sliding_window, 1024);
  config["use_sliding_window"] = false;
  EXPECT_EQ(types_of(import_hf_config(config)), (std::vector{F, F, F, F}));
}

TEST(HfImportFamiliesTest, QwenSlidingLayerTypesWithoutUseSlidingWindowAreRefused) {
  json config = base("qwen3", 2, 16, 4, 2048);
  config["layer_types"] = {"sliding_attention", "full_attention"};
  config["sliding_window"] = 4096;
  const std::string error = error_of(config);
  EXPECT_NE(error.find("qwen3: sliding_window: layer 0 is a sliding layer"), std::string::npos)
      << error;
}

TEST(HfImportFamiliesTest, Qwen3DefaultsTheHeadDimTo128WhenAbsentButQwen3MoeDerivesIt) {
  // Qwen3Config declares head_dim = 128; Qwen3MoeConfig declares none, so vLLM derives it.
  EXPECT_EQ(import_hf_config(base("qwen3", 2, 32, 4, 2048)).model.layers[0].head_size, 128);
  EXPECT_EQ(import_hf_config(base("qwen3_moe", 2, 32, 4, 2048)).model.layers[0].head_size, 64);
}

TEST(HfImportFamiliesTest, Gemma2SlidesOnEvenLayers) {
  json config = base("gemma2", 4, 8, 4, 2304);
  config["head_dim"] = 256;
  config["sliding_window"] = 4096;
  const EngineConfig c = import_hf_config(config);
  EXPECT_EQ(types_of(c), (std::vector{S, F, S, F}));
  EXPECT_EQ(c.model.layers[0].head_size, 256);
}

TEST(HfImportFamiliesTest, Gemma3WrapperDerivesItsPatternAndNamesTheLanguageModel) {
  json text = base("gemma3_text", 12, 8, 4, 2560);
  text.erase("model_type");  // a wrapper's text_config may omit it
  text["head_dim"] = 256;
  text["sliding_window"] = 1024;
  const json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                       {"model_type", "gemma3"},
                       {"text_config", text}};
  const HfImport hf = import_hf_model(config);
  EXPECT_EQ(hf.model_type, "gemma3_text");
  std::vector<AttentionType> expected(12, S);
  expected[5] = expected[11] = F;  // sliding_window_pattern 6: every sixth layer is global
  EXPECT_EQ(types_of(hf.config), expected);
  EXPECT_EQ(hf.config.model.layers[0].name, "language_model.model.layers.0.self_attn.attn");
}

TEST(HfImportFamiliesTest, Gemma3nE2BSharesTheLastTenLayersWithTheLastLocalAndGlobalLayers) {
  json config = base("gemma3n_text", 30, 8, 2, 2048);
  config["head_dim"] = 256;
  config["sliding_window"] = 512;
  config["num_kv_shared_layers"] = 10;
  const EngineConfig c = import_hf_config(config);
  const auto& layers = c.model.layers;
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(layers[i].type, (i + 1) % 5 == 0 ? F : S) << i;
    const std::string target =
        i < 20 ? "" : fmt::format("model.layers.{}.self_attn.attn", layers[i].type == F ? 19 : 18);
    EXPECT_EQ(layers[i].kv_sharing_target, target) << i;
  }
}

TEST(HfImportFamiliesTest, GptOssSlidesOnEvenLayersWhateverLayerTypesSay) {
  json config = base("gpt_oss", 4, 64, 8, 2880);
  config["head_dim"] = 64;
  config["sliding_window"] = 128;
  config["layer_types"] = {"full_attention", "full_attention", "full_attention", "full_attention"};
  const EngineConfig c = import_hf_config(config);
  EXPECT_EQ(types_of(c), (std::vector{S, F, S, F}));
  EXPECT_EQ(c.model.layers[0].name, "model.layers.0.attn.attn");
  EXPECT_EQ(c.model.layers[0].sliding_window, 128);
}

TEST(HfImportFamiliesTest, Llama4ChunksRopeLayersAndKeepsNopeLayersGlobal) {
  json text = base("llama4_text", 8, 40, 8, 5120);
  text["head_dim"] = 128;
  text["attention_chunk_size"] = 8192;
  const json config = {{"architectures", {"Llama4ForConditionalGeneration"}},
                       {"model_type", "llama4"},
                       {"text_config", text}};
  const EngineConfig c = import_hf_config(config);
  EXPECT_EQ(types_of(c), (std::vector{C, C, C, F, C, C, C, F}));  // no_rope_layer_interval 4
  EXPECT_EQ(c.model.layers[0].attention_chunk_size, 8192);
  text["no_rope_layers"] = {1, 0, 1, 0, 1, 0, 1, 0};
  text["attention_chunk_size"] = 4096;
  const EngineConfig given = import_hf_config({{"model_type", "llama4"}, {"text_config", text}});
  EXPECT_EQ(types_of(given), (std::vector{C, F, C, F, C, F, C, F}));
  text["attention_chunk_size"] = nullptr;
  const EngineConfig unchunked =
      import_hf_config({{"model_type", "llama4"}, {"text_config", text}});
  EXPECT_EQ(types_of(unchunked), std::vector<AttentionType>(8, F));
}

TEST(HfImportFamiliesTest, Phi3WindowAppliesToEveryLayerAndKvHeadsDefaultToHeads) {
  json config = base("phi3", 2, 32, 32, 3072);
  config.erase("num_key_value_heads");
  config["sliding_window"] = 2047;
  const EngineConfig c = import_hf_config(config);
  EXPECT_EQ(types_of(c), (std::vector{S, S}));
  EXPECT_EQ(c.model.layers[0].num_kv_heads, 32);
  EXPECT_EQ(c.model.layers[0].head_size, 96);
}

TEST(HfImportFamiliesTest, Cohere2IsGlobalEveryFourthLayer) {
  json config = base("cohere2", 8, 32, 8, 4096);
  config["sliding_window"] = 4096;
  EXPECT_EQ(types_of(import_hf_config(config)), (std::vector{S, S, S, F, S, S, S, F}));
}

TEST(HfImportFamiliesTest, WhisperHasEncoderLayersWithoutCacheAndDecoderSelfPlusCross) {
  const json config = {{"architectures", {"WhisperForConditionalGeneration"}},
                       {"model_type", "whisper"},
                       {"d_model", 768},
                       {"encoder_layers", 2},
                       {"decoder_layers", 2},
                       {"encoder_attention_heads", 12},
                       {"decoder_attention_heads", 12},
                       {"max_source_positions", 1500},
                       {"max_target_positions", 448},
                       {"num_hidden_layers", 2},
                       {"vocab_size", 51865}};
  const EngineConfig c = import_hf_config(config);
  EXPECT_EQ(types_of(c), (std::vector{AttentionType::encoder_only, AttentionType::encoder_only, F,
                                      AttentionType::cross, F, AttentionType::cross}));
  EXPECT_EQ(c.model.layers[3].name, "model.decoder.layers.0.encoder_attn.attn");
  EXPECT_EQ(c.model.layers[0].head_size, 64);
  EXPECT_EQ(c.model.max_model_len, 448);
  EXPECT_EQ(c.model.max_encoder_len, 1500);
}

TEST(HfImportFamiliesTest, RefusalsNameTheModelTypeAndTheField) {
  EXPECT_NE(error_of(base("llamma", 2, 8, 8, 512))
                .find("\"llamma\" is not an architecture the "
                      "importer maps (did you mean \"llama\"?)"),
            std::string::npos);
  json missing = base("llama", 2, 8, 8, 512);
  missing["num_attention_heads"] = nullptr;  // absent would be LlamaConfig's default
  EXPECT_NE(error_of(missing).find("llama: num_attention_heads: missing"), std::string::npos);
  json wrong_type = base("llama", 2, 8, 8, 512);
  wrong_type["head_dim"] = "64";
  EXPECT_NE(error_of(wrong_type).find("llama: head_dim: expected an integer"), std::string::npos);
  json short_types = base("gemma2", 3, 8, 4, 2048);
  short_types["layer_types"] = {"full_attention"};
  EXPECT_NE(
      error_of(short_types).find("gemma2: layer_types: 1 entries, but num_hidden_layers is 3"),
      std::string::npos);
  json mamba = base("llama", 2, 8, 8, 512);
  mamba["layer_types"] = {"mamba", "full_attention"};
  EXPECT_NE(error_of(mamba).find("llama: layer_types: entry 0 is \"mamba\", a state layer"),
            std::string::npos);
  EXPECT_NE(error_of(base("falcon_h1", 2, 8, 8, 512)).find("falcon_h1: a hybrid"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "gemma3"}, {"text_config", 3}}).find("text_config: expected"),
            std::string::npos);
  json indexer = base("deepseek_v3", 2, 8, 8, 512);
  indexer["index_topk"] = 2048;
  EXPECT_NE(error_of(indexer).find("deepseek_v3: index_topk"), std::string::npos);
  json shared = base("gemma3n_text", 4, 8, 2, 2048);
  shared["num_kv_shared_layers"] = 4;
  EXPECT_NE(error_of(shared).find("gemma3n_text: num_kv_shared_layers: 4 is outside"),
            std::string::npos);
}

TEST(HfImportFamiliesTest, NoLengthFieldMeansVllmsDefault2048) {
  json config = base("llama", 2, 8, 8, 512);
  config.erase("max_position_embeddings");
  const HfImport hf = import_hf_model(config);
  EXPECT_EQ(hf.config.model.max_model_len, 2048);
  config["seq_length"] = 4096;
  config["max_position_embeddings"] = 16384;  // the smallest length key wins
  EXPECT_EQ(import_hf_model(config).config.model.max_model_len, 4096);
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// The largest documented model (limits::kMaxLayers) imports; the fuzz target skips such models.
TEST(HfImportFamiliesTest, HundredThousandLayerConfigImports) {
  const EngineConfig c = import_hf_config(base("llama", 100000, 32, 8, 4096));
  ASSERT_EQ(c.model.layers.size(), 100000u);
  EXPECT_EQ(c.model.layers.back().name, "model.layers.99999.self_attn.attn");
}

}  // namespace
}  // namespace attnrt
