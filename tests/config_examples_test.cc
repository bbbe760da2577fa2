// The example configs (examples/*.json): each loads, and its layers match the published model
// config it was written from. tiny-yoco.json is also the default embedded in the library.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attnrt/config/config_loader.h"

namespace attnrt {
namespace {

std::string example_path(const std::string& name) {
  return std::string(ATTNRT_SOURCE_DIR) + "/examples/" + name;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> layer_names(const EngineConfig& config) {
  std::vector<std::string> names;
  for (const LayerConfig& layer : config.model.layers) names.push_back(layer.name);
  return names;
}

TEST(ConfigDefault, EmbeddedTextIsTinyYoco) {
  EXPECT_EQ(default_config_text(), read_text(example_path("tiny-yoco.json")));
  const EngineConfig embedded = default_config();
  const EngineConfig file = load_config_file(example_path("tiny-yoco.json"));
  EXPECT_EQ(embedded.model.name, "tiny-yoco");
  EXPECT_EQ(layer_names(embedded), layer_names(file));
}

TEST(ConfigExamples, TinyYocoSharesKvGemma3nStyle) {
  const EngineConfig config = default_config();
  ASSERT_EQ(config.model.layers.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const LayerConfig& layer = config.model.layers[i];
    EXPECT_EQ(layer.name, "model.layers." + std::to_string(i) + ".self_attn");
    EXPECT_EQ(layer.type, i % 2 == 0 ? AttentionType::sliding_window : AttentionType::full);
    EXPECT_EQ(layer.sliding_window, i % 2 == 0 ? 64 : 0);
    EXPECT_EQ(layer.num_heads, 8);
    EXPECT_EQ(layer.num_kv_heads, 2);
    EXPECT_EQ(layer.head_size, 32);
    const std::string target = i < 4        ? ""
                               : i % 2 == 0 ? "model.layers.2.self_attn"
                                            : "model.layers.3.self_attn";
    EXPECT_EQ(layer.kv_sharing_target, target) << i;
  }
  EXPECT_EQ(config.model.hidden_size, 256);
  EXPECT_EQ(config.model.vocab_size, 1024);
  EXPECT_EQ(config.model.max_model_len, 1024);
  EXPECT_EQ(config.cache.block_size, 16);
  EXPECT_EQ(config.cache.dtype, DType::bf16);
  EXPECT_EQ(config.cache.memory, 64ull << 20);
  EXPECT_TRUE(config.cache.kv_sharing_fast_prefill);
  EXPECT_EQ(config.scheduler.max_num_seqs, 32);
  EXPECT_EQ(config.scheduler.max_num_batched_tokens, 512);
  EXPECT_EQ(config.compilation.cudagraph_mode, CUDAGraphMode::FULL_AND_PIECEWISE);
  EXPECT_EQ(config.compilation.capture_sizes,
            (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}));
}

TEST(ConfigExamples, EveryExampleFileLoads) {
  std::vector<std::string> loaded;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(ATTNRT_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".json") continue;
    const EngineConfig config = load_config_file(entry.path().string());
    EXPECT_FALSE(config.model.layers.empty()) << entry.path();
    loaded.push_back(entry.path().filename().string());
  }
  EXPECT_GE(loaded.size(), 9u);
}

void expect_uniform(const EngineConfig& config, std::size_t count, int heads, int kv_heads,
                    int head_size) {
  ASSERT_EQ(config.model.layers.size(), count);
  for (const LayerConfig& layer : config.model.layers) {
    EXPECT_EQ(layer.num_heads, heads) << layer.name;
    EXPECT_EQ(layer.num_kv_heads, kv_heads) << layer.name;
    EXPECT_EQ(layer.head_size, head_size) << layer.name;
  }
}

TEST(ConfigExamples, Llama3_8B) {
  const EngineConfig config = load_config_file(example_path("llama-3-8b.json"));
  expect_uniform(config, 32, 32, 8, 128);
  for (const LayerConfig& layer : config.model.layers) EXPECT_EQ(layer.type, AttentionType::full);
  EXPECT_EQ(config.model.hidden_size, 4096);
  EXPECT_EQ(config.model.vocab_size, 128256);
  EXPECT_EQ(config.model.max_model_len, 8192);
  EXPECT_EQ(config.cache.memory, 24ull << 30);
}

TEST(ConfigExamples, Mistral7BSlidesOnEveryLayer) {
  const EngineConfig config = load_config_file(example_path("mistral-7b.json"));
  expect_uniform(config, 32, 32, 8, 128);
  for (const LayerConfig& layer : config.model.layers) {
    EXPECT_EQ(layer.type, AttentionType::sliding_window);
    EXPECT_EQ(layer.sliding_window, 4096);
  }
  EXPECT_EQ(config.model.vocab_size, 32000);
  EXPECT_EQ(config.model.max_model_len, 32768);
}

TEST(ConfigExamples, Gemma2_9BAlternatesFromSlidingOnEvenLayers) {
  const EngineConfig config = load_config_file(example_path("gemma-2-9b.json"));
  expect_uniform(config, 42, 16, 8, 256);
  for (std::size_t i = 0; i < 42; ++i) {
    const LayerConfig& layer = config.model.layers[i];
    EXPECT_EQ(layer.type, i % 2 == 0 ? AttentionType::sliding_window : AttentionType::full) << i;
    EXPECT_EQ(layer.sliding_window, i % 2 == 0 ? 4096 : 0) << i;
  }
  EXPECT_EQ(config.model.hidden_size, 3584);
  EXPECT_EQ(config.model.vocab_size, 256000);
  EXPECT_EQ(config.model.max_model_len, 8192);
}

TEST(ConfigExamples, Gemma3nE2BSharesTheLastTenLayers) {
  const EngineConfig config = load_config_file(example_path("gemma-3n-e2b.json"));
  expect_uniform(config, 30, 8, 2, 256);
  for (std::size_t i = 0; i < 30; ++i) {
    const LayerConfig& layer = config.model.layers[i];
    const bool full = i % 5 == 4;
    EXPECT_EQ(layer.type, full ? AttentionType::full : AttentionType::sliding_window) << i;
    EXPECT_EQ(layer.sliding_window, full ? 0 : 512) << i;
    const std::string target = i < 20 ? ""
                               : full ? "model.layers.19.self_attn"
                                      : "model.layers.18.self_attn";
    EXPECT_EQ(layer.kv_sharing_target, target) << i;
  }
  EXPECT_EQ(config.model.hidden_size, 2048);
  EXPECT_EQ(config.model.vocab_size, 262400);
  EXPECT_EQ(config.model.max_model_len, 32768);
  EXPECT_TRUE(config.cache.kv_sharing_fast_prefill);

  const EngineConfig unshared = load_config_file(example_path("gemma-3n-e2b-no-sharing.json"));
  expect_uniform(unshared, 30, 8, 2, 256);
  for (std::size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(unshared.model.layers[i].type, config.model.layers[i].type) << i;
    EXPECT_FALSE(unshared.model.layers[i].shares_kv()) << i;
  }
  EXPECT_EQ(unshared.cache.memory, config.cache.memory);  // same budget, for the comparison
}

TEST(ConfigExamples, DeepSeekV2LiteIsMla) {
  const EngineConfig config = load_config_file(example_path("deepseek-v2-lite.json"));
  expect_uniform(config, 27, 16, 1, 576);  // 576 = kv_lora_rank 512 + 64 rope dims
  for (const LayerConfig& layer : config.model.layers) {
    EXPECT_EQ(layer.type, AttentionType::mla);
    EXPECT_EQ(layer.head_size_v, 512);
  }
  EXPECT_EQ(config.model.hidden_size, 2048);
  EXPECT_EQ(config.model.vocab_size, 102400);
}

TEST(ConfigExamples, WhisperSmallDecoderInterleavesSelfAndCrossAttention) {
  const EngineConfig config = load_config_file(example_path("whisper-small-decoder.json"));
  expect_uniform(config, 24, 12, 12, 64);
  for (std::size_t block = 0; block < 12; ++block) {
    const LayerConfig& self = config.model.layers[2 * block];
    const LayerConfig& cross = config.model.layers[2 * block + 1];
    EXPECT_EQ(self.name, "model.decoder.layers." + std::to_string(block) + ".self_attn");
    EXPECT_EQ(self.type, AttentionType::full);
    EXPECT_EQ(cross.name, "model.decoder.layers." + std::to_string(block) + ".encoder_attn");
    EXPECT_EQ(cross.type, AttentionType::cross);
  }
  EXPECT_EQ(config.model.hidden_size, 768);
  EXPECT_EQ(config.model.vocab_size, 51865);
  EXPECT_EQ(config.model.max_model_len, 448);
  EXPECT_EQ(config.model.max_encoder_len, 1500);
}

TEST(ConfigExamples, DraftFlashInferFollowsAFlashAttnTarget) {
  const EngineConfig config = load_config_file(example_path("draft-flashinfer.json"));
  const std::vector<LayerConfig>& layers = config.model.layers;
  ASSERT_EQ(layers.size(), 5u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(layers[i].backend, "FLASH_ATTN") << i;
    EXPECT_FALSE(layers[i].draft) << i;
  }
  EXPECT_EQ(layers[4].name, "drafter.layers.0.self_attn");
  EXPECT_EQ(layers[4].backend, "FLASHINFER");
  EXPECT_TRUE(layers[4].draft);
  EXPECT_EQ(config.speculative.num_speculative_tokens, 3);
}

}  // namespace
}  // namespace attnrt
