// estimate_hf_weight_bytes: published parameter counts of real configs (tests/data/hf), exact
// per-rank bytes of tiny hand-written configs, and errors that name the culprit.

#include "attnrt/config/hf_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "error_of.h"

namespace attnrt {
namespace {

using nlohmann::json;
using testing::error_of;

json load(const std::string& name) {
  std::ifstream in(std::string(ATTNRT_SOURCE_DIR) + "/tests/data/hf/" + name);
  EXPECT_TRUE(in.good()) << name;
  return json::parse(in);
}

std::uint64_t component(const WeightBreakdown& w, const std::string& name, bool bytes = false) {
  for (const WeightComponent& c : w.components) {
    if (c.name == name) return bytes ? c.bytes : c.parameters;
  }
  return 0;
}

void expect_near_published(std::uint64_t parameters, double published) {
  EXPECT_LT(std::fabs(static_cast<double>(parameters) - published), 0.01 * published)
      << parameters << " vs " << published;
}

bool has_substr(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// 64 hidden, 2 layers, 4 heads of 16, 2 KV heads, MLP 128, vocab 1000: 202,048 parameters
// (embeddings 64,000 + attention 2 x 12,288 + MLP 2 x 24,576 + norms 320 + lm_head 64,000).
json tiny_llama() {
  return json::parse(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
    "vocab_size": 1000, "torch_dtype": "bfloat16", "tie_word_embeddings": false})");
}

TEST(HfWeightsTest, Llama31_8B) {
  const WeightBreakdown w = estimate_hf_weight_bytes(load("llama-3.1-8b-instruct.json"), 1);
  expect_near_published(w.total_parameters, 8.03e9);  // model card: 8B (8.03B)
  EXPECT_EQ(w.total_parameters, 8'030'261'248u);      // the checkpoint's tensor count
  EXPECT_EQ(w.total_bytes, 2 * w.total_parameters);   // bfloat16, nothing quantized
  EXPECT_EQ(w.storage, "bfloat16");
  EXPECT_EQ(component(w, "lm_head"), 128256ull * 4096);
  EXPECT_EQ(component(w, "embeddings"), 128256ull * 4096);
  EXPECT_TRUE(w.not_counted.empty());
}

TEST(HfWeightsTest, Mixtral8x7B) {
  const WeightBreakdown w = estimate_hf_weight_bytes(load("mixtral-8x7b-v0.1.json"), 1);
  expect_near_published(w.total_parameters, 46.7e9);  // Mistral AI: 46.7B total
  EXPECT_EQ(component(w, "mlp (experts)"), 32ull * 8 * 3 * 4096 * 14336);
  EXPECT_EQ(component(w, "router"), 32ull * 8 * 4096);
}

TEST(HfWeightsTest, Qwen3_14B) {
  const WeightBreakdown w = estimate_hf_weight_bytes(load("qwen3-14b.json"), 1);
  expect_near_published(w.total_parameters, 14.8e9);  // model card: 14.8B
}

// Model card: 15.7B total. By hand: embeddings and lm_head 2 x 209,715,200; MLA attention 27 x
// 13,762,560 (+512 kv_a_layernorm); layer 0 dense 67,239,936; 26 MoE layers of 64 experts x
// 8,650,752 + 2 shared (17,301,504) + router 131,072; norms 27 x 4,096 + 2,048.
TEST(HfWeightsTest, DeepSeekV2Lite) {
  const WeightBreakdown w = estimate_hf_weight_bytes(load("deepseek-v2-lite.json"), 1);
  expect_near_published(w.total_parameters, 15.7e9);
  EXPECT_EQ(w.total_parameters, 15'706'484'224u);
  EXPECT_EQ(component(w, "mlp (dense)"), 67'239'936u);
  EXPECT_EQ(component(w, "mlp (shared experts)"), 26ull * 17'301'504);
}

// Model card: 25.2B total, 3.8B active (the ~550M vision encoder is not in that figure). Every
// layer has a dense MLP and the 128-expert MoE block; 5 of 30 layers are full attention (head 512,
// 2 KV heads, K reused as V). Tied embeddings: no lm_head.
TEST(HfWeightsTest, Gemma4_26B_A4B) {
  const WeightBreakdown w = estimate_hf_weight_bytes(load("gemma-4-26b-a4b.json"), 1);
  expect_near_published(w.total_parameters, 25.2e9);
  EXPECT_EQ(component(w, "lm_head"), 0u);
  EXPECT_EQ(component(w, "mlp (experts)"), 30ull * 128 * 3 * 2816 * 704);
  EXPECT_EQ(component(w, "mlp (dense)"), 30ull * 3 * 2816 * 2112);
  // sliding: q 4096 + k 2048 + v 2048 + o 4096 rows of 2816; full: q 8192 + k 1024 + o 8192.
  EXPECT_EQ(component(w, "attention"), 25ull * 12288 * 2816 + 5ull * 17408 * 2816);
  ASSERT_EQ(w.not_counted.size(), 1u);
  EXPECT_EQ(w.not_counted[0], "vision tower (vision_config)");
}

// openai/whisper-large-v3; OpenAI's table says 1550M. Hand count: encoder 636,968,960 (convs,
// 1500 positions, 32 layers of 19,676,160) + decoder 906,521,600 (tokens, 448 positions, 32
// layers of 26,236,160 with cross attention); proj_out is tied.
TEST(HfWeightsTest, WhisperLargeV3) {
  const json config = json::parse(R"({"model_type": "whisper", "d_model": 1280,
    "encoder_layers": 32, "decoder_layers": 32, "encoder_attention_heads": 20,
    "decoder_attention_heads": 20, "encoder_ffn_dim": 5120, "decoder_ffn_dim": 5120,
    "vocab_size": 51866, "num_mel_bins": 128, "max_source_positions": 1500,
    "max_target_positions": 448, "torch_dtype": "float16"})");
  const WeightBreakdown w = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(w.total_parameters, 1'543'490'560u);
  expect_near_published(w.total_parameters, 1.55e9);
  EXPECT_EQ(component(w, "cross attention"), 32u * (4 * 1280 * 1280 + 3 * 1280));
}

// openai/gpt-oss-20b: 20.9B total per OpenAI's model card; experts in mxfp4.
TEST(HfWeightsTest, GptOss20B) {
  const json config = json::parse(R"({"model_type": "gpt_oss", "hidden_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "num_local_experts": 32, "intermediate_size": 2880, "vocab_size": 201088,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4"}})");
  const WeightBreakdown w = estimate_hf_weight_bytes(config, 1);
  expect_near_published(w.total_parameters, 20.9e9);
  EXPECT_EQ(w.storage, "mxfp4 experts, bfloat16 rest");
}

TEST(HfWeightsTest, TensorParallelHalvesAllButNorms) {
  const json config = tiny_llama();
  const WeightBreakdown one = estimate_hf_weight_bytes(config, 1);
  const WeightBreakdown two = estimate_hf_weight_bytes(config, 2);
  EXPECT_EQ(one.total_parameters, 202'048u);
  EXPECT_EQ(one.total_bytes, 2 * 202'048u);
  EXPECT_EQ(two.total_parameters, 202'048u);  // parameters are the whole model's
  const std::uint64_t norms = 2 * 2 * 64 + 64;
  EXPECT_EQ(component(two, "norms", true), 2 * norms);  // replicated
  EXPECT_EQ(two.total_bytes, (202'048u - norms) + 2 * norms);
  // tp 3 rounds up: 334 vocab rows, 2 of 4 heads, 1 of 2 KV heads, 43 of 128 MLP columns.
  const WeightBreakdown three = estimate_hf_weight_bytes(config, 3);
  EXPECT_EQ(component(three, "embeddings", true), 334u * 64 * 2);
  EXPECT_EQ(component(three, "attention", true), 2u * 2 * (32 + 16 + 16 + 32) * 64);
  EXPECT_EQ(component(three, "mlp (dense)", true), 2u * 2 * 3 * 43 * 64);
}

// Past 2 KV heads each rank keeps one KV head's K and V; Q and O shrink to one head.
TEST(HfWeightsTest, KvHeadsReplicatedPastTheirCount) {
  const json config = tiny_llama();
  const std::uint64_t per_layer = (16 + 16 + 16 + 16) * 64;  // q, k, v rows x 64; o 64 x 16
  EXPECT_EQ(component(estimate_hf_weight_bytes(config, 4), "attention", true), 2 * 2 * per_layer);
  EXPECT_EQ(component(estimate_hf_weight_bytes(config, 8), "attention", true), 2 * 2 * per_layer);
}

TEST(HfWeightsTest, TiedEmbeddingsDropTheLmHead) {
  json config = tiny_llama();
  config["tie_word_embeddings"] = true;
  const WeightBreakdown tied = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(component(tied, "lm_head"), 0u);
  EXPECT_EQ(tied.total_parameters, 202'048u - 64'000);
  // gemma2 ties when the config does not say (Gemma2Config's default).
  config["model_type"] = "gemma2";
  config.erase("tie_word_embeddings");
  EXPECT_EQ(component(estimate_hf_weight_bytes(config, 1), "lm_head"), 0u);
  config["model_type"] = "llama";
  EXPECT_EQ(component(estimate_hf_weight_bytes(config, 1), "lm_head"), 64'000u);
}

TEST(HfWeightsTest, WrapperTieWordEmbeddingsGoverns) {
  json text = tiny_llama();
  text["tie_word_embeddings"] = false;
  json wrapper = {{"model_type", "llava"},
                  {"text_config", text},
                  {"tie_word_embeddings", true},
                  {"vision_config", {{"hidden_size", 8}}}};
  const WeightBreakdown w = estimate_hf_weight_bytes(wrapper, 1);
  EXPECT_EQ(component(w, "lm_head"), 0u);
  ASSERT_EQ(w.not_counted.size(), 1u);
  EXPECT_EQ(w.not_counted[0], "vision tower (vision_config)");
  wrapper["tie_word_embeddings"] = false;
  wrapper["text_config"]["tie_word_embeddings"] = true;
  EXPECT_EQ(component(estimate_hf_weight_bytes(wrapper, 1), "lm_head"), 64'000u);
}

// Linear weights 1 byte + f32 scales; embeddings, lm_head and norms stay bfloat16 (256,640 B).
TEST(HfWeightsTest, Fp8BlockAndPerChannelScales) {
  json config = tiny_llama();
  config["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {32, 32}}};
  WeightBreakdown w = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(w.storage, "fp8 e4m3 (block scales 32x32), bfloat16 rest");
  // Per layer: q, o 4096 + 4 blocks; k, v 2048 + 2 blocks; gate, up, down 8192 + 8 blocks.
  EXPECT_EQ(component(w, "attention", true), 2u * (2 * (4096 + 16) + 2 * (2048 + 8)));
  EXPECT_EQ(component(w, "mlp (dense)", true), 2u * 3 * (8192 + 32));
  EXPECT_EQ(w.total_bytes, 256'640u + 24'672 + 49'344);
  config["quantization_config"].erase("weight_block_size");
  w = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(w.storage, "fp8 e4m3 (per-channel scales), bfloat16 rest");
  // One scale per output row: q, o 64; k, v 32; gate, up 128; down 64.
  EXPECT_EQ(w.total_bytes, 256'640u + 2 * (12'288 + 4 * 192) + 2 * (24'576 + 4 * 320));
}

// gpt-oss shape, 1 layer, 4 experts of 64: expert matrices are 64 x 64, in mxfp4 each 2,048 B of
// values + 64 rows x 2 scale bytes; the other 26,504 parameters stay bfloat16.
TEST(HfWeightsTest, Mxfp4Experts) {
  const json config = json::parse(R"({"model_type": "gpt_oss", "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "num_local_experts": 4, "intermediate_size": 64, "vocab_size": 100, "dtype": "bfloat16",
    "tie_word_embeddings": false, "quantization_config": {"quant_method": "mxfp4"}})");
  const WeightBreakdown w = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(w.total_parameters, 75'656u);
  EXPECT_EQ(component(w, "mlp (experts)", true), 12u * (2048 + 128) + 2 * 768);
  EXPECT_EQ(w.total_bytes, 2 * (75'656u - 49'152) + 12 * (2048 + 128));
  EXPECT_EQ(component(w, "attention"), 12'288u + 64 + 32 + 32 + 64 + 4);  // biases and sinks
}

// 4-bit weights, per group of 32 inputs an f16 scale and a packed 4-bit zero.
TEST(HfWeightsTest, AwqGroups) {
  json config = tiny_llama();
  config["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}};
  const WeightBreakdown w = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(w.storage, "awq 4-bit (groups of 32, f16 scales), bfloat16 rest");
  // q, o: 2048 + 128 groups x 2.5 B; k, v: 1024 + 64 x 2.5; gate, up, down: 4096 + 256 x 2.5.
  EXPECT_EQ(component(w, "attention", true), 2u * (2 * 2368 + 2 * 1184));
  EXPECT_EQ(w.total_bytes, 256'640u + 14'208 + 2 * 3 * 4736);
}

// Gemma 3n, tiny: embeddings 80; PLE 120 (table 6 x 4, model projection 4 x 8, per layer gate
// and projection 2 x 2 x 16); AltUp/LAuReL 296 (2 stream projections of 64, per layer 4 + 8 + 16
// + 8 + 24 + 24); attention 2 x 192; MLP 384 + 768; norms 104 + 16 (q/k) + 2 + 16 (PLE).
TEST(HfWeightsTest, Gemma3nTiny) {
  const json config = json::parse(R"({"model_type": "gemma3n_text", "hidden_size": 8,
    "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
    "vocab_size": 10, "intermediate_size": [16, 32], "hidden_size_per_layer_input": 2,
    "vocab_size_per_layer_input": 6, "altup_num_inputs": 2, "laurel_rank": 3,
    "torch_dtype": "bfloat16"})");
  const WeightBreakdown w = estimate_hf_weight_bytes(config, 1);
  EXPECT_EQ(w.total_parameters, 2'170u);
  EXPECT_EQ(component(w, "altup/laurel"), 296u);
  EXPECT_EQ(component(w, "per-layer embeddings"), 120u);
  EXPECT_EQ(component(w, "lm_head"), 0u);  // Gemma3nTextConfig ties by default
}

// Every family builds; the shapes of the ones above are checked exactly.
TEST(HfWeightsTest, EveryFamilyBuilds) {
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000, "dtype": "float32")";
  const std::string extras[] = {
      R"("model_type": "mistral")",
      R"("model_type": "qwen2")",
      R"("model_type": "qwen3")",
      R"("model_type": "phi3")",
      R"("model_type": "cohere2")",
      R"("model_type": "gemma3_text")",
      R"("model_type": "qwen2_moe", "num_experts": 8, "moe_intermediate_size": 32,
         "shared_expert_intermediate_size": 64, "mlp_only_layers": [0])",
      R"("model_type": "qwen3_moe", "num_experts": 8, "moe_intermediate_size": 32,
         "decoder_sparse_step": 2)",
      R"("model_type": "llama4_text", "num_local_experts": 4, "intermediate_size_mlp": 256,
         "interleave_moe_layer_step": 2)",
      R"("model_type": "deepseek_v3", "q_lora_rank": 32, "kv_lora_rank": 16,
         "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8, "n_routed_experts": 8,
         "n_shared_experts": 1, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
         "num_nextn_predict_layers": 1)",
      R"("model_type": "gemma4_text", "hidden_size_per_layer_input": 4, "enable_moe_block": true,
         "num_experts": 4, "moe_intermediate_size": 32, "num_kv_shared_layers": 2,
         "use_double_wide_mlp": true)"};
  for (const std::string& extra : extras) {
    const json config = json::parse("{" + base + ", " + extra + "}");
    const WeightBreakdown w = estimate_hf_weight_bytes(config, 2);
    EXPECT_GT(w.total_parameters, 64'000u) << extra;
    EXPECT_EQ(w.storage, "float32");
    EXPECT_LT(w.total_bytes, 4 * w.total_parameters) << extra;  // tp 2 splits most of it
  }
  const json deepseek = json::parse("{" + base + ", " + extras[9] + "}");
  const WeightBreakdown w = estimate_hf_weight_bytes(deepseek, 1);
  ASSERT_EQ(w.not_counted.size(), 1u);
  EXPECT_EQ(w.not_counted[0], "MTP layers (num_nextn_predict_layers 1)");
  EXPECT_EQ(component(w, "mlp (dense)"), 3u * 64 * 128);  // first_k_dense_replace 1
}

TEST(HfWeightsTest, ErrorsNameTheCulprit) {
  json config = tiny_llama();
  config["quantization_config"] = {{"quant_method", "bitsandbytes"}};
  std::string message = error_of([&] { estimate_hf_weight_bytes(config, 1); });
  EXPECT_TRUE(has_substr(message, "llama") && has_substr(message, "bitsandbytes")) << message;

  config = tiny_llama();
  config["model_type"] = "llamma";
  message = error_of([&] { estimate_hf_weight_bytes(config, 1); });
  EXPECT_TRUE(has_substr(message, "'llamma'") && has_substr(message, "'llama'")) << message;

  config = tiny_llama();
  config["intermediate_size"] = nullptr;  // absent would be LlamaConfig's default
  message = error_of([&] { estimate_hf_weight_bytes(config, 1); });
  EXPECT_TRUE(has_substr(message, "llama: intermediate_size: missing")) << message;

  config = tiny_llama();
  config["hidden_size"] = "64";
  message = error_of([&] { estimate_hf_weight_bytes(config, 1); });
  EXPECT_TRUE(has_substr(message, "hidden_size: expected an integer")) << message;

  config = tiny_llama();
  config["hidden_size"] = -64;
  EXPECT_TRUE(has_substr(error_of([&] { estimate_hf_weight_bytes(config, 1); }), "negative"));

  config = tiny_llama();
  config.erase("torch_dtype");
  EXPECT_TRUE(has_substr(error_of([&] { estimate_hf_weight_bytes(config, 1); }), "torch_dtype"));

  config = tiny_llama();
  EXPECT_TRUE(
      has_substr(error_of([&] { estimate_hf_weight_bytes(config, 0); }), "tensor_parallel_size"));
  EXPECT_TRUE(has_substr(error_of([&] { estimate_hf_weight_bytes(json::array(), 1); }),
                         "expected a JSON object"));
}

TEST(HfWeightsTest, HostileSizesAreRefused) {
  json config = tiny_llama();
  config["vocab_size"] = std::uint64_t{1} << 40;
  config["hidden_size"] = std::uint64_t{1} << 40;
  EXPECT_TRUE(has_substr(error_of([&] { estimate_hf_weight_bytes(config, 1); }),
                         "does not fit in 64 bits"));
  config = tiny_llama();
  config["num_hidden_layers"] = std::uint64_t{1} << 62;
  EXPECT_TRUE(
      has_substr(error_of([&] { estimate_hf_weight_bytes(config, 1); }), "num_hidden_layers"));
  config = tiny_llama();
  config["model_type"] = "gemma3n_text";
  config["altup_num_inputs"] = std::uint64_t{1} << 40;
  EXPECT_TRUE(has_substr(error_of([&] { estimate_hf_weight_bytes(config, 1); }),
                         "does not fit in 64 bits"));
}

}  // namespace
}  // namespace attnrt
