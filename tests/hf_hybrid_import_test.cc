// The hybrid families imported from real configs and planned (SEMANTICS §4.4): Nemotron-H,
// Qwen3-Next, Jamba and Granite 4 (tests/data/hf/), and Qwen3.5's layer_types under text_config.
// Layer kinds, names and state dimensions as vLLM builds them, then the plan: block size after
// alignment, padding, groups, blocks for a budget, and what limits the concurrency. Every figure
// was worked out by hand from vLLM's rules (the comments).

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/hf_import.h"
#include "attnrt/config/model_source.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attention_plan.h"

namespace attnrt {
namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

std::string fixture_path(const std::string& name) {
  return std::string(ATTNRT_SOURCE_DIR) + "/tests/data/hf/" + name;
}

int count_of(const EngineConfig& config, AttentionType type) {
  int count = 0;
  for (const LayerConfig& layer : config.model.layers) count += layer.type == type ? 1 : 0;
  return count;
}

struct Expected {
  std::string file;
  std::string first_state_layer;
  std::string first_attention_layer;
  int attention_layers;
  int state_layers;
  int block_size;                 // after alignment (requested 16)
  std::int64_t state_page_bytes;  // unpadded
  std::int64_t padding_bytes;
  std::size_t groups;
  std::int64_t num_blocks;  // for 24 GiB (Nemotron-H: 48 GiB)
  std::uint64_t attention_blocks_per_request;
  std::uint64_t state_blocks_per_request;
  std::string_view limited_by;
};

class HfHybridPlanTest : public testing::TestWithParam<Expected> {};

TEST_P(HfHybridPlanTest, ImportAndPlan) {
  const Expected& e = GetParam();
  EngineArgs args;
  args.memory = (e.file.starts_with("nemotron") ? 48 : 24) * GiB;
  args.enable_prefix_caching = false;  // vLLM's "none" mode: one state block per request
  const LoadedModel model = load_model(fixture_path(e.file), args);
  const EngineConfig& config = model.config;
  const int state_layers =
      count_of(config, AttentionType::mamba) + count_of(config, AttentionType::linear_attention);
  EXPECT_EQ(count_of(config, AttentionType::full), e.attention_layers);
  EXPECT_EQ(state_layers, e.state_layers);
  EXPECT_NE(config.find_layer(e.first_state_layer), nullptr) << e.first_state_layer;
  EXPECT_NE(config.find_layer(e.first_attention_layer), nullptr) << e.first_attention_layer;

  const AttentionPlan plan = plan_attention(config, backend_registry_for(config));
  ASSERT_TRUE(plan.kv.hybrid_block_size.has_value());
  const HybridBlockSize& hybrid = *plan.kv.hybrid_block_size;
  EXPECT_EQ(hybrid.requested_block_size, 16);
  EXPECT_EQ(hybrid.block_size, e.block_size);
  EXPECT_EQ(hybrid.state_page_bytes, e.state_page_bytes);
  EXPECT_EQ(hybrid.padding_bytes(), e.padding_bytes);
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  EXPECT_EQ(kv.kv_cache_groups.size(), e.groups);
  EXPECT_EQ(kv.num_blocks, e.num_blocks);
  const BlocksPerRequest blocks = blocks_per_request(kv, config);
  EXPECT_EQ(blocks.attention, e.attention_blocks_per_request);
  EXPECT_EQ(blocks.state, e.state_blocks_per_request);
  EXPECT_EQ(blocks.limited_by(), e.limited_by);
  EXPECT_DOUBLE_EQ(max_concurrency(kv, config),
                   static_cast<double>(e.num_blocks) / static_cast<double>(blocks.total()));

  // By default prefix caching is on, as in the newest vLLM: "align" holds two state blocks per
  // request and state group, on the same pool.
  args.enable_prefix_caching.reset();
  const LoadedModel cached = load_model(fixture_path(e.file), args);
  EXPECT_TRUE(cached.config.cache.enable_prefix_caching);
  const AttentionPlan aligned = plan_attention(cached.config, backend_registry_for(cached.config));
  EXPECT_EQ(aligned.kv.kv_cache_config.num_blocks, e.num_blocks);
  const BlocksPerRequest two = blocks_per_request(aligned.kv.kv_cache_config, cached.config);
  EXPECT_EQ(two.attention, e.attention_blocks_per_request);
  EXPECT_EQ(two.state, 2 * e.state_blocks_per_request);
}

INSTANTIATE_TEST_SUITE_P(
    RealConfigs, HfHybridPlanTest,
    testing::Values(
        // 54 Mamba-2 + 10 attention of 118 layers; conv (3, 20480) bf16 + SSM (256, 64, 256) fp32.
        // A = 4096: block 16 · cdiv(16900096, 65536) = 4128. Buckets 54 and 10: groups of 10, so
        // 6 Mamba groups of 9 + 1; 10 slots of 16908288 bytes a block; 48 GiB hold 304 blocks.
        // A request of 8192 tokens: 2 attention blocks, 6 state blocks.
        Expected{"nemotron-h-56b-base-8k.json", "model.layers.0.mixer", "model.layers.7.mixer.attn",
                 10, 54, 4128, 16900096, 8192, 7, 304, 2, 6, "state blocks"},
        // 36 Gated DeltaNet + 12 full; state (3, 8192) + (32, 128, 128) bf16 = 1097728; A = 2048:
        // block 544, padding 16384. Groups of 12: 3 + 1; 12 slots of 1114112; 24 GiB: 1927 blocks.
        // 262144 tokens: cdiv(262144, 544) = 482 attention blocks, 3 state blocks.
        Expected{"qwen3-next-80b-a3b-thinking.json", "model.layers.0.linear_attn",
                 "model.layers.3.self_attn.attn", 12, 36, 544, 1097728, 16384, 4, 1927, 482, 3,
                 "tokens"},
        // 28 Mamba-1 + 4 attention; conv (3, 8192) + SSM (8192, 16) bf16 = 311296; A = 4096:
        // block 80, page 327680. Groups of 4: 7 + 1; 4 slots; 24 GiB: 19660 blocks.
        // 262144 tokens: cdiv(262144, 80) = 3277 attention blocks, 7 state blocks.
        Expected{"jamba-v0.1.json", "model.layers.0.mixer", "model.layers.4.attn", 4, 28, 80,
                 311296, 16384, 8, 19660, 3277, 7, "tokens"},
        // 36 Mamba-2 + 4 attention; conv (3, 3328) + SSM (48, 64, 128) bf16 = 806400; A = 2048:
        // block 400, page 819200. Groups of 4: 9 + 1; 4 slots; 24 GiB: 7864 blocks.
        // 131072 tokens: cdiv(131072, 400) = 328 attention blocks, 9 state blocks.
        Expected{"granite-4.0-h-tiny.json", "model.layers.0.mixer", "model.layers.5.self_attn.attn",
                 4, 36, 400, 806400, 12800, 10, 7864, 328, 9, "tokens"}),
    [](const testing::TestParamInfo<Expected>& param) {
      std::string name = param.param.file.substr(0, param.param.file.find('.'));
      std::erase(name, '-');
      return name;
    });

TEST(HfHybridImport, StateDimensionsAndDtypes) {
  const LoadedModel nemotron = load_model(fixture_path("nemotron-h-56b-base-8k.json"));
  const LayerConfig& mixer = *nemotron.config.find_layer("model.layers.0.mixer");
  ASSERT_TRUE(mixer.state.has_value());
  const auto& dims = std::get<Mamba2Dims>(mixer.state->dims);
  EXPECT_EQ(dims.intermediate_size, 256 * 64);
  EXPECT_EQ(dims.n_groups, 8);
  EXPECT_EQ(dims.state_size, 256);
  EXPECT_EQ(mixer.state->dtypes.conv, DType::bf16);
  EXPECT_EQ(mixer.state->dtypes.ssm, DType::f32);  // vLLM keeps Nemotron-H's SSM state in fp32
  const LayerConfig& attention = *nemotron.config.find_layer("model.layers.7.mixer.attn");
  EXPECT_EQ(attention.num_kv_heads, 8);
  EXPECT_EQ(attention.head_size, 128);  // attention_head_dim

  const LoadedModel jamba = load_model(fixture_path("jamba-v0.1.json"));
  const auto& mamba1 =
      std::get<Mamba1Dims>(jamba.config.find_layer("model.layers.0.mixer")->state->dims);
  EXPECT_EQ(mamba1.intermediate_size, 8192);  // hidden_size 4096 x mamba_expand 2
  EXPECT_EQ(mamba1.state_size, 16);
  EXPECT_EQ(mamba1.conv_kernel, 4);
}

TEST(HfHybridImport, Qwen35ReadsLayerTypesAndTheSsmDtypeUnderTextConfig) {
  nlohmann::json config = nlohmann::json::parse(R"({
    "model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
    "text_config": {"model_type": "qwen3_5_text", "hidden_size": 2048, "num_hidden_layers": 4,
      "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
      "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
      "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
      "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
      "max_position_embeddings": 262144, "torch_dtype": "bfloat16"}})");
  const HfImport hf = import_hf_model(config);
  ASSERT_EQ(hf.config.model.layers.size(), 4u);
  const LayerConfig& linear = hf.config.model.layers[0];
  EXPECT_EQ(linear.name, "language_model.model.layers.0.linear_attn");
  EXPECT_EQ(linear.type, AttentionType::linear_attention);
  EXPECT_EQ(linear.state->dtypes.ssm, DType::f32);
  EXPECT_EQ(linear.state->dtypes.conv, DType::bf16);
  EXPECT_EQ(hf.config.model.layers[3].name, "language_model.model.layers.3.self_attn.attn");
  // Recurrent state (32, 128, 128) in fp32: 2 MiB + the conv state 48 KiB.
  const AttentionPlan plan = plan_attention(hf.config, backend_registry_for(hf.config));
  EXPECT_EQ(plan.kv.hybrid_block_size->state_page_bytes, 3 * 8192 * 2 + 32 * 128 * 128 * 4);
  EXPECT_EQ(plan.kv.hybrid_block_size->block_size, 1056);  // 16 · cdiv(2146304, 32768)
}

TEST(HfHybridImport, BadHybridFieldsAreNamed) {
  const auto error_of_config = [](const char* text) -> std::string {
    try {
      (void)import_hf_model(nlohmann::json::parse(text));
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of_config(R"({"model_type": "nemotron_h", "num_hidden_layers": 3,
      "hybrid_override_pattern": "M*X", "num_attention_heads": 8, "hidden_size": 64})")
                .find("nemotron_h: hybrid_override_pattern: character 2 is 'X'"),
            std::string::npos);
  EXPECT_NE(error_of_config(R"({"model_type": "nemotron_h", "num_hidden_layers": 3,
      "hybrid_override_pattern": "M*", "num_attention_heads": 8, "hidden_size": 64})")
                .find("2 characters, but num_hidden_layers is 3"),
            std::string::npos);
  EXPECT_NE(error_of_config(R"({"model_type": "jamba", "num_hidden_layers": 8,
      "attn_layer_period": 4, "attn_layer_offset": 4, "num_attention_heads": 8,
      "hidden_size": 64})")
                .find("jamba: attn_layer_offset: 4 is outside [0, attn_layer_period 4)"),
            std::string::npos);
  EXPECT_NE(error_of_config(R"({"model_type": "granitemoehybrid", "num_hidden_layers": 2,
      "layer_types": ["mamba", "moe"], "num_attention_heads": 8, "hidden_size": 64})")
                .find("layer_types: entry 1 is \"moe\""),
            std::string::npos);
  EXPECT_NE(error_of_config(R"({"model_type": "qwen3_next", "num_hidden_layers": 4,
      "linear_num_value_heads": 0, "num_attention_heads": 8, "hidden_size": 64})")
                .find("qwen3_next: linear_num_value_heads: must be positive (got 0)"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
