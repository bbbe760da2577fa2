// bind_kv_caches (SEMANTICS §0) and the KV-sharing plan of SEMANTICS §8.9.

#include <gtest/gtest.h>

#include "attnrt/core/error.h"
#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// Two full-attention layers with 32 KiB pages (16 tokens × 8 KV heads × (64 + 64) × bf16).
EngineConfig two_layer_config(bool share, std::uint64_t memory) {
  EngineConfig config;
  for (int i = 0; i < 2; ++i) {
    LayerConfig layer;
    layer.name = "layer" + std::to_string(i);
    layer.num_heads = 8;
    layer.num_kv_heads = 8;
    layer.head_size = 64;
    layer.head_size_v = 64;
    config.model.layers.push_back(layer);
  }
  if (share) config.model.layers[1].kv_sharing_target = "layer0";
  config.cache.block_size = 16;
  config.cache.dtype = DType::bf16;
  config.cache.layout = KVCacheLayout::LBHNC;
  config.cache.memory = memory;
  return config;
}

TEST(KVSharingPlan, TwoLayersWithoutSharingSplitTheBudget) {
  const KVCachePlan plan = plan_kv_cache(two_layer_config(false, 20 * kGiB));
  const KVCacheConfig& kv = plan.kv_cache_config;
  EXPECT_EQ(plan.layer_specs.size(), 2u);
  EXPECT_EQ(kv.kv_cache_groups[0].kv_cache_spec.page_size_bytes(), 32768);
  EXPECT_EQ(kv.num_blocks, 327680);
  ASSERT_EQ(kv.kv_cache_groups.size(), 1u);
  EXPECT_EQ(kv.kv_cache_groups[0].layer_names, (std::vector<std::string>{"layer0", "layer1"}));
  EXPECT_EQ(kv.backing_bytes(), 20 * kGiB);
  ASSERT_EQ(plan.views.size(), 2u);
  // Each layer owns a distinct 10 GiB region.
  EXPECT_EQ(plan.views[0].byte_offset, 0);
  EXPECT_EQ(plan.views[1].byte_offset, static_cast<std::int64_t>(10 * kGiB));
  EXPECT_EQ(kv.kv_cache_tensors[0].layer_stride, static_cast<std::int64_t>(10 * kGiB));
}

TEST(KVSharingPlan, SharingLayerGivesItsBudgetToTheTarget) {
  const KVCachePlan plain = plan_kv_cache(two_layer_config(false, 20 * kGiB));
  const KVCachePlan plan = plan_kv_cache(two_layer_config(true, 20 * kGiB));
  const KVCacheConfig& kv = plan.kv_cache_config;
  ASSERT_EQ(plan.layer_specs.size(), 1u);
  ASSERT_EQ(plan.shared_layers.size(), 1u);
  EXPECT_EQ(plan.shared_layers[0], std::make_pair(std::string("layer1"), std::string("layer0")));
  EXPECT_EQ(kv.num_blocks, 655360);
  ASSERT_EQ(kv.kv_cache_tensors.size(), 1u);
  EXPECT_EQ(kv.kv_cache_tensors[0].layers, (std::vector<std::string>{"layer0"}));
  EXPECT_EQ(kv.backing_bytes(), 20 * kGiB);
  EXPECT_EQ(kv.kv_cache_groups[0].layer_names, (std::vector<std::string>{"layer0", "layer1"}));
  EXPECT_EQ(tokens_capacity(kv), 2 * tokens_capacity(plain.kv_cache_config));
  EXPECT_DOUBLE_EQ(max_concurrency(kv, two_layer_config(true, 20 * kGiB)),
                   2 * max_concurrency(plain.kv_cache_config, two_layer_config(false, 20 * kGiB)));
}

struct Bound {
  EngineConfig config;
  KVCachePlan plan;
  KVCacheAllocation cache;
};

Bound allocate(bool share) {
  Bound b{two_layer_config(share, 4 << 20), {}, {}};
  b.plan = plan_kv_cache(b.config);
  b.cache = allocate_kv_cache(b.plan.kv_cache_config, Device::cpu());
  return b;
}

TEST(BindKvCaches, SharingLayerAliasesItsTargetsView) {
  Bound b = allocate(true);
  bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
  const AttentionLayer& l0 = b.plan.forward_context.at("layer0");
  const AttentionLayer& l1 = b.plan.forward_context.at("layer1");
  ASSERT_TRUE(l0.has_kv_cache());
  ASSERT_TRUE(l1.has_kv_cache());
  EXPECT_EQ(l1.kv_cache().buffer(), l0.kv_cache().buffer());
  EXPECT_EQ(l1.kv_cache().byte_offset(), l0.kv_cache().byte_offset());
  EXPECT_EQ(l1.kv_cache().shape(), l0.kv_cache().shape());
  EXPECT_EQ(b.cache.views.count("layer1"), 1u);  // the alias is recorded in the map
}

TEST(BindKvCaches, OwningLayersGetDistinctViews) {
  Bound b = allocate(false);
  bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
  const Tensor& v0 = b.plan.forward_context.at("layer0").kv_cache();
  const Tensor& v1 = b.plan.forward_context.at("layer1").kv_cache();
  EXPECT_EQ(v0.buffer(), v1.buffer());
  EXPECT_LE(v0.end_byte(), v1.first_byte());
}

TEST(BindKvCaches, EntriesOutsideTheContextStayUnbound) {
  Bound b = allocate(false);
  b.cache.views["runner_only"] = b.cache.views.at("layer0");
  bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
  EXPECT_EQ(b.cache.views.count("runner_only"), 1u);
  EXPECT_FALSE(b.plan.forward_context.contains("runner_only"));
}

TEST(BindKvCaches, BindingAgainReplacesTheViews) {
  Bound b = allocate(false);
  bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
  KVCacheAllocation second = allocate_kv_cache(b.plan.kv_cache_config, Device::cpu());
  bind_kv_caches(second.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
  EXPECT_EQ(b.plan.forward_context.at("layer0").kv_cache().buffer(), second.backing);
}

TEST(BindKvCaches, MissingTargetIsAnErrorAndChangesNothing) {
  Bound b = allocate(true);
  b.cache.views.erase("layer0");
  b.cache.views["other"] = Tensor::zeros(DType::bf16, {4, 8, 16, 128});
  try {
    bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("layer1"), std::string::npos) << message;
    EXPECT_NE(message.find("layer0"), std::string::npos) << message;
  }
  EXPECT_EQ(b.cache.views.size(), 1u);
  EXPECT_FALSE(b.plan.forward_context.at("layer1").has_kv_cache());
}

TEST(BindKvCaches, OwningLayerWithoutAViewIsAnErrorAndBindsNothing) {
  Bound b = allocate(false);
  b.cache.views.erase("layer1");
  try {
    bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer1 owns a KV cache"), std::string::npos);
  }
  EXPECT_FALSE(b.plan.forward_context.at("layer0").has_kv_cache());
}

TEST(BindKvCaches, ViewOfTheWrongShapeIsRejected) {
  Bound b = allocate(false);
  b.cache.views["layer1"] = Tensor::zeros(DType::bf16, {4, 2, 16, 128});
  try {
    bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit its spec"), std::string::npos);
  }
  EXPECT_FALSE(b.plan.forward_context.at("layer0").has_kv_cache());
}

TEST(BindKvCaches, EveryLayerOfTheAttentionGroupsMustEndUpBound) {
  Bound b = allocate(false);
  std::vector<std::vector<AttentionGroup>> groups(1);
  groups[0].push_back(AttentionGroup{
      nullptr, {"layer0", "ghost"}, b.plan.kv_cache_config.kv_cache_groups[0].kv_cache_spec, 0});
  try {
    bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config, groups);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ghost"), std::string::npos);
  }
  EXPECT_FALSE(b.plan.forward_context.at("layer0").has_kv_cache());
  groups[0][0].layer_names = {"layer0", "layer1"};
  bind_kv_caches(b.cache.views, b.plan.forward_context, b.plan.kv_cache_config, b.config, groups);
  EXPECT_TRUE(b.plan.forward_context.at("layer1").has_kv_cache());
}

}  // namespace
}  // namespace attnrt
