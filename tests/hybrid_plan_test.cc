// A hybrid model planned end to end (SEMANTICS §4.4): state layers in the config, the attention
// block size aligned to the state page, state groups beside attention groups, the state views
// bound per layer, vLLM's max_num_seqs check under FULL graphs, and the errors of state layers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/config/engine_args.h"
#include "attnrt/core/error.h"
#include "attnrt/engine/engine.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/attn_utils.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

// Mamba-2 layers of conv (3, 320) bf16 + SSM (8, 32, 16) f32 = 18304 bytes per request, and
// attention layers of 2 KV heads of 64 (512 bytes per token in bf16): m m a m m a.
std::string hybrid_json(const std::string& extra = "",
                        const std::string& mode = "FULL_AND_PIECEWISE", int max_num_seqs = 64) {
  const std::string mamba = R"({"type": "mamba", "state": {"mixer": "mamba2",
      "intermediate_size": 256, "n_groups": 2, "num_heads": 8, "head_dim": 32, "state_size": 16,
      "conv_kernel": 4, "ssm_dtype": "float32"}})";
  const std::string attention = R"({"num_heads": 4, "num_kv_heads": 2, "head_size": 64})";
  return R"({"model": {"max_model_len": 1024, "layers": [)" + mamba + "," + mamba + "," +
         attention + "," + mamba + "," + mamba + "," + attention + "]}, " +
         R"("cache": {"memory": 4194304}, "compilation": {"cudagraph_mode": ")" + mode + R"("},
         "scheduler": {"max_num_seqs": )" +
         std::to_string(max_num_seqs) + "}" + extra + "}";
}

AttentionPlan plan_of(const EngineConfig& config) {
  return plan_attention(config, backend_registry_for(config));
}

TEST(HybridPlan, AttentionBlocksAreRaisedAndStatePagesPadded) {
  const EngineConfig config = load_config_text(hybrid_json(), "hybrid");
  const AttentionPlan plan = plan_of(config);
  ASSERT_TRUE(plan.kv.hybrid_block_size.has_value());
  const HybridBlockSize& hybrid = *plan.kv.hybrid_block_size;
  EXPECT_EQ(hybrid.requested_block_size, 16);
  EXPECT_EQ(hybrid.state_page_bytes, 3 * 320 * 2 + 8 * 32 * 16 * 4);
  EXPECT_EQ(hybrid.attention_bytes_per_token, 512);
  EXPECT_EQ(hybrid.block_size, 48);  // 16 · cdiv(18304, 16 · 512)
  EXPECT_EQ(hybrid.padding_bytes(), 48 * 512 - 18304);
  EXPECT_EQ(plan.kv.attention_block_size, 48);

  // Buckets of 4 mamba and 2 attention layers: groups of 2, the mamba bucket split round robin.
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  ASSERT_EQ(kv.kv_cache_groups.size(), 3u);
  EXPECT_EQ(kv.kv_cache_groups[0].layer_names,
            (std::vector<std::string>{"model.layers.0.mixer", "model.layers.3.mixer"}));
  EXPECT_EQ(kv.kv_cache_groups[1].layer_names,
            (std::vector<std::string>{"model.layers.1.mixer", "model.layers.4.mixer"}));
  EXPECT_EQ(kv.kv_cache_groups[2].kv_cache_spec.kind, KVSpecKind::full);
  EXPECT_EQ(kv.kv_cache_groups[2].kv_cache_spec.block_size, 48);
  for (const KVCacheGroupSpec& group : kv.kv_cache_groups) {
    EXPECT_EQ(group.kv_cache_spec.page_size_bytes(), 48 * 512);
  }
  EXPECT_EQ(kv.num_blocks, 4194304 / (2 * 48 * 512));
  // State groups take no attention backend; each attention layer still has one.
  EXPECT_TRUE(plan.backends.attn_groups[0].empty());
  EXPECT_TRUE(plan.backends.attn_groups[1].empty());
  EXPECT_EQ(plan.backends.attn_groups[2].size(), 1u);
  EXPECT_EQ(plan.backends.kernel_block_sizes[0], 48);
  // Per request of 1024 tokens: cdiv(1024, 48) attention blocks and one block per state group.
  const BlocksPerRequest blocks = blocks_per_request(kv, config);
  EXPECT_EQ(blocks.attention, 22u);
  EXPECT_EQ(blocks.state, 2u);
  EXPECT_EQ(blocks.limited_by(), "tokens");
}

TEST(HybridPlan, StateLayersBindTheirPageAndTypedStateViews) {
  const EngineConfig config = load_config_text(hybrid_json(), "hybrid");
  AttentionPlan plan = plan_of(config);
  KVCacheAllocation cache =
      allocate_kv_cache(plan.kv.kv_cache_config, Device::cpu(), plan.backends.kernel_block_sizes);
  bind_kv_caches(cache.views, plan.kv.forward_context, plan.kv.kv_cache_config, config,
                 plan.backends.attn_groups);
  const AttentionLayer& mamba = plan.kv.forward_context.at("model.layers.3.mixer");
  ASSERT_TRUE(mamba.has_kv_cache());
  const Tensor& page = mamba.kv_cache();
  EXPECT_EQ(page.dtype(), DType::int8);
  EXPECT_EQ(page.shape(),
            (std::vector<std::int64_t>{plan.kv.kv_cache_config.num_blocks, 1, 1, 18304}));
  const std::vector<Tensor> states = mamba.state_views();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].dtype(), DType::bf16);
  EXPECT_EQ(states[0].shape(), (std::vector<std::int64_t>{page.size(0), 3, 320}));
  EXPECT_EQ(states[1].dtype(), DType::f32);
  EXPECT_EQ(states[1].shape(), (std::vector<std::int64_t>{page.size(0), 8, 32, 16}));
  // Conv state first, SSM state right after it; block b steps one padded page.
  EXPECT_EQ(states[0].byte_offset(), page.byte_offset());
  EXPECT_EQ(states[1].byte_offset(), page.byte_offset() + 3 * 320 * 2);
  EXPECT_EQ(states[1].stride(0) * 4, page.stride(0));
  EXPECT_EQ(page.stride(0), 48 * 512);
  // Writing a state element writes its byte in the layer's page, in block 2.
  states[1].set({2, 7, 31, 15}, 1.5f);
  float value = 0;
  std::memcpy(&value, page.data() + 2 * page.stride(0) + 3 * 320 * 2 + 4 * (8 * 32 * 16 - 1), 4);
  EXPECT_EQ(value, 1.5f);
  // The plan's geometry says the same.
  const auto view =
      std::ranges::find(plan.kv.views, "model.layers.3.mixer", &LayerViewGeometry::layer);
  ASSERT_NE(view, plan.kv.views.end());
  ASSERT_EQ(view->states.size(), 2u);
  EXPECT_EQ(view->states[1].byte_offset, states[1].byte_offset());
  EXPECT_EQ(view->states[1].strides, states[1].strides());
  EXPECT_NE(error_of([&] {
              (void)plan.kv.forward_context.at("model.layers.2.self_attn").state_views();
            }).find("keeps no state"),
            std::string::npos);
}

TEST(HybridPlan, FullGraphsNeedAStateBlockPerSequence) {
  // 4 MiB hold 85 blocks: 128 sequences do not fit FULL graphs, and do under PIECEWISE. The
  // plan is made all the same; vLLM's refusal is its verdict, and an engine throws it.
  const AttentionPlan full =
      plan_of(load_config_text(hybrid_json("", "FULL_AND_PIECEWISE", 128), "h"));
  EXPECT_FALSE(full.startup.starts());
  ASSERT_EQ(full.startup.reasons.size(), 1u);
  EXPECT_EQ(full.startup.reasons[0],
            "max_num_seqs (128) exceeds available Mamba cache blocks (85). Each decode sequence "
            "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
            "max_num_seqs to at most 85 or increase gpu_memory_utilization.");
  EXPECT_EQ(full.kv.kv_cache_config.num_blocks, 85);
  EXPECT_EQ(error_of([&] { require_startup(full.startup); }), full.startup.reasons[0]);
  EXPECT_TRUE(plan_of(load_config_text(hybrid_json("", "PIECEWISE", 128), "h")).startup.starts());
  EXPECT_TRUE(
      plan_of(load_config_text(hybrid_json("", "FULL_AND_PIECEWISE", 85), "h")).startup.starts());
}

TEST(HybridPlan, PrefixCachingHoldsTwoStateBlocksPerRequest) {
  // vLLM's "align" mode (prefix caching on): two state blocks per request and state group, so
  // the concurrency drops; without prefix caching the mode is "none" whatever was asked.
  EngineConfig config = load_config_text(hybrid_json(), "h");
  const auto state_blocks = [&](bool prefix_caching, MambaCacheMode mode) {
    config.cache.enable_prefix_caching = prefix_caching;
    config.cache.mamba_cache_mode = mode;
    const AttentionPlan plan = plan_of(config);
    EXPECT_EQ(plan.kv.attention_block_size, 48);  // the alignment does not depend on the mode
    const BlocksPerRequest blocks = blocks_per_request(plan.kv.kv_cache_config, config);
    EXPECT_EQ(blocks.attention, 22u);  // cdiv(1024, 48) for the one attention group
    return blocks.state;
  };
  EXPECT_EQ(state_blocks(false, MambaCacheMode::none), 2u);  // 2 state groups x 1
  EXPECT_EQ(state_blocks(false, MambaCacheMode::align), 2u);
  EXPECT_EQ(state_blocks(true, MambaCacheMode::none), 4u);  // "none" becomes "align"
  EXPECT_EQ(state_blocks(true, MambaCacheMode::align), 4u);
  config.cache.enable_prefix_caching = true;
  const AttentionPlan plan = plan_of(config);
  EXPECT_DOUBLE_EQ(max_concurrency(plan.kv.kv_cache_config, config),
                   static_cast<double>(plan.kv.kv_cache_config.num_blocks) / 26.0);
  EXPECT_EQ(effective_mamba_cache_mode(config.cache), MambaCacheMode::align);
  EngineArgs args;
  args.mamba_cache_mode = "alligned";
  const std::string bad = error_of([&] { apply_engine_args(config, args, DType::bf16); });
  EXPECT_NE(bad.find("--mamba-cache-mode: \"alligned\" is not a Mamba cache mode"),
            std::string::npos)
      << bad;
  config.cache.mamba_cache_mode = MambaCacheMode::all;
  EXPECT_NE(error_of([&] { validate_config(config); }).find("cache.mamba_cache_mode: \"all\""),
            std::string::npos);
}

TEST(HybridPlan, DraftTokensAddConvRowsAndStateBlocks) {
  const EngineConfig config =
      load_config_text(hybrid_json(R"(, "speculative": {"num_speculative_tokens": 2})"), "h");
  const AttentionPlan plan = plan_of(config);
  const KVCacheSpec& state = plan.kv.kv_cache_config.kv_cache_groups[0].kv_cache_spec;
  EXPECT_EQ(state.state_tensors[0].shape, (std::vector<std::int64_t>{5, 320}));
  EXPECT_EQ(state.num_speculative_blocks, 2);
  EXPECT_EQ(state.max_num_blocks_per_req(config.model.max_model_len), 3);
}

TEST(HybridPlan, TheEngineRefusesStateLayers) {
  const EngineConfig config = load_config_text(hybrid_json(), "hybrid");
  EXPECT_NE(error_of([&] { Engine engine(config); })
                .find("model.layers[0] (model.layers.0.mixer) is a mamba layer, and the built-in "
                      "model has no state kernels"),
            std::string::npos);
}

std::string layer_error(const std::string& layer_json, const std::string& extra = "") {
  return error_of([&] {
    (void)plan_of(load_config_text(R"({"model": {"layers": [)" + layer_json +
                                       R"(, {"num_heads": 4, "head_size": 16}]})" + extra + "}",
                                   "bad"));
  });
}

TEST(HybridPlan, StateLayerErrorsNameTheField) {
  const std::string state = R"("state": {"num_heads": 8, "head_dim": 4, "intermediate_size": 32,
      "state_size": 8, "conv_kernel": 4})";
  EXPECT_NE(layer_error(R"({"type": "mamba"})").find("model.layers[0].state: missing"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"type": "mamba", "num_heads": 4, )" + state + "}")
                .find("model.layers[0].num_heads: a mamba layer keeps a recurrent state"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"type": "mamba", "backend": "CPU_FLASH", )" + state + "}")
                .find("model.layers[0].backend: a mamba layer takes no attention backend"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"type": "linear_attention", "state": {"mixer": "mamba2"}})")
                .find("model.layers[0].state.mixer: a linear_attention layer cannot hold a mamba2"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"num_heads": 4, "head_size": 16, )" + state + "}")
                .find("model.layers[0].state: only mamba and linear_attention layers"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"type": "mamba", "state": {"mixer": "mamba3"}})").find("mamba2"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"type": "mamba", "state": {"num_heads": 8, "head_dim": 4,
      "intermediate_size": 32, "state_size": 8, "conv_kernel": 1}})")
                .find("model.layers[0].state.conv_kernel: 1 is too small (at least 2)"),
            std::string::npos);
  EXPECT_NE(layer_error(R"({"type": "mamba", )" + state + R"(, "colour": 1})").find("colour"),
            std::string::npos);
  // Heads that do not divide among the ranks are named when the layer is planned.
  const std::string six_heads = R"("state": {"num_heads": 6, "head_dim": 4,
      "intermediate_size": 32, "state_size": 8, "conv_kernel": 4})";
  EXPECT_NE(layer_error(R"({"type": "mamba", )" + six_heads + "}",
                        R"(, "parallel": {"tensor_parallel_size": 4})")
                .find("model.layers[0]: layer model.layers.0.mixer: state shape:"),
            std::string::npos);
  // A state cannot be shared, and a state layer shares nothing.
  const std::string sharing = error_of([&] {
    (void)load_config_text(
        R"({"model": {"layers": [{"type": "mamba", "name": "m", )" + state +
            R"(}, {"num_heads": 4, "head_size": 16, "kv_sharing_target": "m"}]}})",
        "bad");
  });
  EXPECT_NE(sharing.find("\"m\" is a mamba layer, whose per-request state cannot be shared"),
            std::string::npos)
      << sharing;
  EXPECT_NE(layer_error(R"({"type": "mamba", "kv_sharing_target": "x", )" + state + "}")
                .find("cannot share a KV cache"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
