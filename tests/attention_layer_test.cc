#include "attnrt/attention/attention_layer.h"

#include <gtest/gtest.h>

#include "attnrt/attention/forward_context.h"
#include "attnrt/core/error.h"

namespace attnrt {
namespace {

LayerConfig layer(std::string name, AttentionType type, int heads, int kv_heads, int head_size) {
  LayerConfig config;
  config.name = std::move(name);
  config.type = type;
  config.num_heads = heads;
  config.num_kv_heads = kv_heads;
  config.head_size = head_size;
  config.head_size_v = head_size;
  return config;
}

CacheConfig cache(int block_size = 16, DType dtype = DType::bf16) {
  CacheConfig config;
  config.block_size = block_size;
  config.dtype = dtype;
  return config;
}

TEST(AttentionLayer, KeepsItsShapeWithoutTensorParallelism) {
  AttentionLayer attn(layer("l0", AttentionType::full, 32, 8, 128));
  EXPECT_EQ(attn.name(), "l0");
  EXPECT_EQ(attn.num_heads(), 32);
  EXPECT_EQ(attn.num_kv_heads(), 8);
  EXPECT_EQ(attn.head_size(), 128);
  EXPECT_EQ(attn.head_size_v(), 128);
  EXPECT_FALSE(attn.shares_kv());
  EXPECT_FALSE(attn.has_kv_cache());
}

TEST(AttentionLayer, DividesHeadsAmongTensorParallelRanks) {
  AttentionLayer attn(layer("l0", AttentionType::full, 32, 8, 128), 4);
  EXPECT_EQ(attn.num_heads(), 8);
  EXPECT_EQ(attn.num_kv_heads(), 2);
}

TEST(AttentionLayer, ReplicatesKvHeadsWhenFewerThanRanks) {
  AttentionLayer attn(layer("l0", AttentionType::full, 32, 2, 128), 8);
  EXPECT_EQ(attn.num_heads(), 4);
  EXPECT_EQ(attn.num_kv_heads(), 1);
}

TEST(AttentionLayer, MlaKeepsOneLatentHeadOnEveryRank) {
  LayerConfig mla = layer("l0", AttentionType::mla, 16, 1, 576);
  mla.head_size_v = 512;
  AttentionLayer attn(mla, 2);
  EXPECT_EQ(attn.num_heads(), 8);
  EXPECT_EQ(attn.num_kv_heads(), 1);
  const KVCacheSpec spec = *attn.get_kv_cache_spec(cache(64));
  EXPECT_EQ(spec.kind, KVSpecKind::mla);
  EXPECT_EQ(spec.head_size_v, 0);
  EXPECT_EQ(spec.page_size_bytes(), 64 * 576 * 2);
}

TEST(AttentionLayer, RejectsHeadsThatDoNotDivide) {
  try {
    AttentionLayer attn(layer("l7", AttentionType::full, 30, 6, 64), 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("l7"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("30 query heads"), std::string::npos);
  }
  try {
    AttentionLayer attn(layer("l8", AttentionType::full, 24, 3, 64), 8);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot replicate 3 KV heads"), std::string::npos);
  }
}

TEST(AttentionLayer, SpecFollowsTheAttentionType) {
  LayerConfig swa = layer("swa", AttentionType::sliding_window, 8, 2, 32);
  swa.sliding_window = 64;
  const KVCacheSpec s = *AttentionLayer(swa).get_kv_cache_spec(cache());
  EXPECT_EQ(s.kind, KVSpecKind::sliding_window);
  EXPECT_EQ(s.sliding_window, 64);
  EXPECT_EQ(s.page_size_bytes(), 16 * 2 * (32 + 32) * 2);

  LayerConfig chunked = layer("chunk", AttentionType::chunked_local, 8, 2, 32);
  chunked.attention_chunk_size = 256;
  const KVCacheSpec c = *AttentionLayer(chunked).get_kv_cache_spec(cache());
  EXPECT_EQ(c.kind, KVSpecKind::chunked_local);
  EXPECT_EQ(c.attention_chunk_size, 256);

  LayerConfig asym = layer("asym", AttentionType::full, 8, 2, 64);
  asym.head_size_v = 32;
  EXPECT_EQ(AttentionLayer(asym).get_kv_cache_spec(cache(16, DType::f32))->page_size_bytes(),
            16 * 2 * (64 + 32) * 4);

  const KVCacheSpec x =
      *AttentionLayer(layer("x", AttentionType::cross, 8, 8, 64)).get_kv_cache_spec(cache());
  EXPECT_EQ(x.kind, KVSpecKind::cross);
}

TEST(AttentionLayer, SharingAndEncoderOnlyLayersOwnNoCache) {
  LayerConfig shared = layer("l1", AttentionType::full, 8, 2, 32);
  shared.kv_sharing_target = "l0";
  EXPECT_FALSE(AttentionLayer(shared).get_kv_cache_spec(cache()).has_value());
  EXPECT_FALSE(AttentionLayer(layer("enc", AttentionType::encoder_only, 8, 8, 64))
                   .get_kv_cache_spec(cache())
                   .has_value());
}

TEST(ForwardContext, KeepsExecutionOrderAndLooksUpByName) {
  ForwardContext context;
  context.add(AttentionLayer(layer("b", AttentionType::full, 8, 2, 32)));
  context.add(AttentionLayer(layer("a", AttentionType::full, 8, 2, 32)));
  ASSERT_EQ(context.size(), 2u);
  EXPECT_EQ(context.layers()[0].name(), "b");
  EXPECT_EQ(context.layers()[1].name(), "a");
  EXPECT_EQ(&context.at("a"), &context.layers()[1]);
  EXPECT_EQ(context.find("zz"), nullptr);
  EXPECT_THROW(context.at("zz"), Error);
  EXPECT_THROW(context.add(AttentionLayer(layer("a", AttentionType::full, 8, 2, 32))), Error);
  EXPECT_EQ(context.size(), 2u);
}

TEST(ForwardContext, KvCacheSpecsListOwningLayersInOrder) {
  ForwardContext context;
  context.add(AttentionLayer(layer("l0", AttentionType::full, 8, 2, 32)));
  LayerConfig shared = layer("l1", AttentionType::full, 8, 2, 32);
  shared.kv_sharing_target = "l0";
  context.add(AttentionLayer(shared));
  context.add(AttentionLayer(layer("enc", AttentionType::encoder_only, 8, 8, 32)));
  context.add(AttentionLayer(layer("l3", AttentionType::full, 8, 2, 32)));
  const LayerSpecs specs = get_kv_cache_spec(context, cache());
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].first, "l0");
  EXPECT_EQ(specs[1].first, "l3");
}

}  // namespace
}  // namespace attnrt
