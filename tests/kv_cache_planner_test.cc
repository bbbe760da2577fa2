// KV cache planning: grouping of layers by spec, page-size unification, blocks for a budget and
// the placement strides of each group (SEMANTICS §4.3, §8.9).

#include "attnrt/kv/kv_cache_planner.h"

#include <gtest/gtest.h>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

using Names = std::vector<std::string>;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kGiB = 1024 * 1024 * 1024;

// 8 KV heads × 16 tokens × (64 + 64) × 2 bytes = 32 KiB per page.
KVCacheSpec full32k() {
  return KVCacheSpec::full(16, 8, 64, DType::bf16);
}
KVCacheSpec sliding32k() {
  return KVCacheSpec::sliding(16, 8, 64, DType::bf16, 1024);
}

std::string name(int index) {
  return "layer" + std::to_string(index);
}

Names names(std::initializer_list<int> indices) {
  Names out;
  for (int index : indices) out.push_back(name(index));
  return out;
}

// --- SEMANTICS §8.9: two full layers, with and without KV sharing ------------------------------

TEST(KVCachePlannerTest, TwoFullLayersSplitTwentyGiB) {
  const auto groups = get_kv_cache_groups({{"layer0", full32k()}, {"layer1", full32k()}});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].layer_names, names({0, 1}));

  const KVCacheConfig config =
      get_kv_cache_config_from_groups(groups, 20 * kGiB, KVCacheLayout::LBHNC);
  EXPECT_EQ(config.num_blocks, 327680);  // 20 GiB / 32 KiB / 2 layers
  EXPECT_EQ(config.layer_slots, 2);
  EXPECT_EQ(config.kv_cache_layout, KVCacheLayout::LBHNC);
  ASSERT_EQ(config.kv_cache_tensors.size(), 1u);
  const KVCacheTensor& tensor = config.kv_cache_tensors[0];
  EXPECT_EQ(tensor.size, 20 * kGiB);
  EXPECT_EQ(config.backing_bytes(), 20 * kGiB);
  EXPECT_EQ(tensor.layers, names({0, 1}));
  EXPECT_EQ(tensor.layer_stride, static_cast<std::int64_t>(10 * kGiB));  // each layer's region
  EXPECT_EQ(tensor.block_stride, 32 * 1024);
  EXPECT_EQ(tensor.offset, 0);
  EXPECT_EQ(tokens_capacity(config), 327680 * 16);
}

TEST(KVCachePlannerTest, SharingLayerDoublesTheBlocks) {
  // layer1 shares layer0's cache, so only layer0 has a spec; the caller appends layer1 later.
  const KVCacheConfig unshared = get_kv_cache_config_from_groups(
      get_kv_cache_groups({{"layer0", full32k()}, {"layer1", full32k()}}), 20 * kGiB,
      KVCacheLayout::LBHNC);
  const KVCacheConfig shared = get_kv_cache_config_from_groups(
      get_kv_cache_groups({{"layer0", full32k()}}), 20 * kGiB, KVCacheLayout::LBHNC);
  EXPECT_EQ(shared.num_blocks, 655360);
  EXPECT_EQ(shared.layer_slots, 1);
  ASSERT_EQ(shared.kv_cache_tensors.size(), 1u);
  EXPECT_EQ(shared.kv_cache_tensors[0].size, 20 * kGiB);
  EXPECT_EQ(shared.kv_cache_tensors[0].layer_stride, static_cast<std::int64_t>(20 * kGiB));
  EXPECT_EQ(tokens_capacity(shared), 2 * tokens_capacity(unshared));

  // max_model_len 4096 → 256 blocks per request: 327680 / 256 = 1280, then twice that.
  EngineConfig engine;
  engine.model.max_model_len = 4096;
  EXPECT_DOUBLE_EQ(max_concurrency(unshared, engine), 1280.0);
  EXPECT_DOUBLE_EQ(max_concurrency(shared, engine), 2560.0);
}

// --- Strides of the group tensors --------------------------------------------------------------

TEST(KVCachePlannerTest, LayoutDecidesLayerAndBlockStrides) {
  const auto groups = get_kv_cache_groups({{"layer0", full32k()}, {"layer1", full32k()}});
  const std::int64_t page = 32 * 1024;
  // 1 MiB / (2 layers × 32 KiB) = 16 blocks.
  const KVCacheConfig layer_outer =
      get_kv_cache_config_from_groups(groups, 1024 * kKiB, KVCacheLayout::LBHNC);
  ASSERT_EQ(layer_outer.num_blocks, 16);
  EXPECT_EQ(layer_outer.kv_cache_tensors[0].layer_stride, page * 16);
  EXPECT_EQ(layer_outer.kv_cache_tensors[0].block_stride, page);

  const KVCacheConfig block_outer =
      get_kv_cache_config_from_groups(groups, 1024 * kKiB, KVCacheLayout::BLHNC);
  EXPECT_EQ(block_outer.kv_cache_layout, KVCacheLayout::BLHNC);
  EXPECT_EQ(block_outer.kv_cache_tensors[0].layer_stride, page);
  EXPECT_EQ(block_outer.kv_cache_tensors[0].block_stride, 2 * page);
  EXPECT_EQ(block_outer.kv_cache_tensors[0].size, 1024 * kKiB);
}

// --- Grouping ----------------------------------------------------------------------------------

TEST(KVCachePlannerTest, EqualSpecsFormOneGroupInExecutionOrder) {
  LayerSpecs specs;
  for (int i : {3, 1, 2}) specs.emplace_back(name(i), sliding32k());
  const auto groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].layer_names, names({3, 1, 2}));
  EXPECT_EQ(groups[0].kv_cache_spec, sliding32k());
}

TEST(KVCachePlannerTest, NoSpecsNoGroupsOneNullBlock) {
  EXPECT_TRUE(get_kv_cache_groups({}).empty());
  const KVCacheConfig config = get_kv_cache_config_from_groups({}, kGiB, KVCacheLayout::LBNHC);
  EXPECT_EQ(config.num_blocks, 1);
  EXPECT_TRUE(config.kv_cache_tensors.empty());
  EXPECT_EQ(config.backing_bytes(), 0u);
  EXPECT_EQ(config.layer_slots, 0);
  EXPECT_EQ(tokens_capacity(config), 0);
  EXPECT_DOUBLE_EQ(max_concurrency(config, EngineConfig{}), 0.0);
}

TEST(KVCachePlannerTest, EncoderOnlyLayersFormNoGroup) {
  KVCacheSpec encoder_only = full32k();
  encoder_only.kind = KVSpecKind::encoder_only;
  EXPECT_TRUE(get_kv_cache_groups({{"enc0", encoder_only}, {"enc1", encoder_only}}).empty());

  const auto groups =
      get_kv_cache_groups({{"enc0", encoder_only}, {"layer0", full32k()}, {"layer1", full32k()}});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].layer_names, names({0, 1}));
}

TEST(KVCachePlannerTest, GemmaTwoAlternationGivesTwoGroups) {
  // 42 layers, sliding on even indices: buckets of 21 and 21 → two groups of 21.
  LayerSpecs specs;
  Names even, odd;
  for (int i = 0; i < 42; ++i) {
    specs.emplace_back(name(i), i % 2 == 0 ? sliding32k() : full32k());
    (i % 2 == 0 ? even : odd).push_back(name(i));
  }
  const auto groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].kv_cache_spec, sliding32k());
  EXPECT_EQ(groups[0].layer_names, even);
  EXPECT_EQ(groups[1].kv_cache_spec, full32k());
  EXPECT_EQ(groups[1].layer_names, odd);

  const KVCacheConfig config =
      get_kv_cache_config_from_groups(groups, 21 * 32 * kKiB * 100, KVCacheLayout::LBNHC);
  EXPECT_EQ(config.layer_slots, 21);
  EXPECT_EQ(config.num_blocks, 100);
  ASSERT_EQ(config.kv_cache_tensors.size(), 2u);
  EXPECT_EQ(config.kv_cache_tensors[1].layers, odd);
  EXPECT_EQ(config.kv_cache_tensors[0].size, config.kv_cache_tensors[1].size);
  EXPECT_EQ(config.group_of("layer4"), 0);
  EXPECT_EQ(config.group_of("layer41"), 1);
  EXPECT_EQ(config.group_of("layer42"), -1);
}

TEST(KVCachePlannerTest, ThreeToOnePatternSplitsRoundRobin) {
  // 24 layers, every fourth full: buckets of 18 sliding and 6 full → group size 6.
  LayerSpecs specs;
  for (int i = 0; i < 24; ++i) specs.emplace_back(name(i), i % 4 == 3 ? full32k() : sliding32k());
  const auto groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 4u);
  // Sliding layers 0,1,2,4,5,6,...: group k takes every third of them starting at k.
  EXPECT_EQ(groups[0].layer_names, names({0, 4, 8, 12, 16, 20}));
  EXPECT_EQ(groups[1].layer_names, names({1, 5, 9, 13, 17, 21}));
  EXPECT_EQ(groups[2].layer_names, names({2, 6, 10, 14, 18, 22}));
  EXPECT_EQ(groups[3].layer_names, names({3, 7, 11, 15, 19, 23}));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(groups[k].kv_cache_spec, sliding32k());
  EXPECT_EQ(groups[3].kv_cache_spec, full32k());

  const KVCacheConfig config =
      get_kv_cache_config_from_groups(groups, 6 * 32 * kKiB * 10, KVCacheLayout::LBHNC);
  EXPECT_EQ(config.layer_slots, 6);
  EXPECT_EQ(config.num_blocks, 10);
  EXPECT_EQ(config.kv_cache_tensors.size(), 4u);
}

TEST(KVCachePlannerTest, UnevenBucketLeavesAShortGroup) {
  // 5 sliding, 3 full: 5 >= 1.5 × 3, so group size 3; sliding splits into [s0,s2,s4], [s1,s3].
  LayerSpecs specs;
  for (int i = 0; i < 8; ++i) specs.emplace_back(name(i), i < 5 ? sliding32k() : full32k());
  const auto groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].layer_names, names({0, 2, 4}));
  EXPECT_EQ(groups[1].layer_names, names({1, 3}));
  EXPECT_EQ(groups[2].layer_names, names({5, 6, 7}));
  const KVCacheConfig config = get_kv_cache_config_from_groups(groups, kGiB, KVCacheLayout::LBHNC);
  EXPECT_EQ(config.layer_slots, 3);
  EXPECT_EQ(config.num_blocks, static_cast<std::int64_t>(kGiB / (3 * 32 * kKiB)));  // 10922
}

TEST(KVCachePlannerTest, CloseBucketSizesUseTheLargest) {
  // 4 sliding, 3 full: 4 < 1.5 × 3, so group size 4 and each bucket stays whole.
  LayerSpecs specs;
  for (int i = 0; i < 7; ++i) specs.emplace_back(name(i), i % 2 == 0 ? sliding32k() : full32k());
  const auto groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].layer_names, names({0, 2, 4, 6}));
  EXPECT_EQ(groups[1].layer_names, names({1, 3, 5}));
}

TEST(KVCachePlannerTest, SmallerPagesGetLargerBlocks) {
  // MLA page 16 × 512 × 2 = 16 KiB, half the full page: its block doubles to 32 tokens.
  const KVCacheSpec mla = KVCacheSpec::mla(16, 512, DType::bf16);
  const auto groups = get_kv_cache_groups(
      {{"layer0", full32k()}, {"layer1", mla}, {"layer2", full32k()}, {"layer3", mla}});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].kv_cache_spec, full32k());
  EXPECT_EQ(groups[0].layer_names, names({0, 2}));
  EXPECT_EQ(groups[1].kv_cache_spec, mla.with_block_size(32));
  EXPECT_EQ(groups[1].kv_cache_spec.page_size_bytes(), 32 * 1024);
  EXPECT_EQ(groups[1].layer_names, names({1, 3}));

  const KVCacheConfig config =
      get_kv_cache_config_from_groups(groups, 2 * 32 * kKiB * 7, KVCacheLayout::LBNHC);
  EXPECT_EQ(config.num_blocks, 7);
  EXPECT_EQ(tokens_capacity(config), 7 * 16);  // the smallest block size
}

TEST(KVCachePlannerTest, PagesThatDoNotDivideCannotBeUnified) {
  // 16 × (64 + 64) × 2 = 4 KiB does not divide 16 × (96 + 96) × 2 = 6 KiB.
  const std::string message = error_of([] {
    get_kv_cache_groups({{"small", KVCacheSpec::full(16, 1, 64, DType::bf16)},
                         {"large", KVCacheSpec::full(16, 1, 96, DType::bf16)}});
  });
  EXPECT_NE(message.find("cannot unify page sizes: layer small has a 4 KiB page"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the 6 KiB page of layer large"), std::string::npos) << message;
}

TEST(KVCachePlannerTest, PaddedSmallerPageCannotGrow) {
  // MLA padded to 20 KiB; the full page is 5 × 16 × 256 × 2 = 40 KiB.
  const std::string message = error_of([] {
    get_kv_cache_groups({{"mla", KVCacheSpec::mla(16, 576, DType::bf16, 4096)},
                         {"full", KVCacheSpec::full(16, 5, 128, DType::bf16)}});
  });
  EXPECT_NE(message.find("cannot unify page sizes: layer mla has a padded 20 KiB page"),
            std::string::npos)
      << message;
}

// --- Budget ------------------------------------------------------------------------------------

TEST(KVCachePlannerTest, BudgetBelowOneBlockIsAnError) {
  const auto groups = get_kv_cache_groups({{"layer0", full32k()}, {"layer1", full32k()}});
  EXPECT_EQ(error_of([&] { get_kv_cache_config_from_groups(groups, 40000, KVCacheLayout::LBHNC); }),
            "cache.memory: 40000 B (39.1 KiB) holds no KV cache block: one block for each of the 2 "
            "layer slots needs 64 KiB (32 KiB per layer page); raise cache.memory to at least "
            "65536 bytes");
  EXPECT_EQ(get_kv_cache_config_from_groups(groups, 65536, KVCacheLayout::LBHNC).num_blocks, 1);
}

TEST(KVCachePlannerTest, GroupsWithDifferentPagesAreRejected) {
  std::vector<KVCacheGroupSpec> groups = {{{"a"}, full32k()},
                                          {{"b"}, KVCacheSpec::full(16, 4, 64, DType::bf16)}};
  EXPECT_NE(error_of([&] {
              get_kv_cache_config_from_groups(groups, kGiB, KVCacheLayout::LBHNC);
            }).find("have different page sizes"),
            std::string::npos);
}

TEST(KVCachePlannerTest, HybridConcurrencySumsBlocksOfEveryGroup) {
  // max_model_len 4096, 2048 tokens per step: a full layer needs 256 blocks per request, a
  // 1024-token window cdiv(3071, 16) + 1 = 193; one request takes 449 block ids.
  LayerSpecs specs;
  for (int i = 0; i < 42; ++i) specs.emplace_back(name(i), i % 2 == 0 ? sliding32k() : full32k());
  const std::uint64_t memory = 3 * 449 * 21 * 32 * kKiB;
  const KVCacheConfig config =
      get_kv_cache_config_from_groups(get_kv_cache_groups(specs), memory, KVCacheLayout::LBNHC);
  ASSERT_EQ(config.num_blocks, 3 * 449);
  EngineConfig engine;
  engine.model.max_model_len = 4096;
  engine.scheduler.max_num_batched_tokens = 2048;
  EXPECT_DOUBLE_EQ(max_concurrency(config, engine), 3.0);
}

// --- Sizes past 64 bits and past int32 block ids ------------------------------------------------

// 2^20 KV heads of 2^20 entries in 2^20-token blocks: a 2^62-byte page that fits, but four layer
// slots of it pass 64 bits (the block bytes once wrapped to 0 and divided the budget by zero).
TEST(KVCachePlannerTest, BlockBytesPastSixtyFourBitsAreRefused) {
  const KVCacheSpec huge = KVCacheSpec::full(1 << 20, 1 << 20, 1 << 20, DType::bf16);
  const std::vector<KVCacheGroupSpec> groups = {{names({0, 1, 2, 3}), huge}};
  const std::string message =
      error_of([&] { get_kv_cache_config_from_groups(groups, kGiB, KVCacheLayout::LBNHC); });
  EXPECT_NE(message.find("KV cache bytes per block (page bytes x layer slots)"), std::string::npos)
      << message;
}

TEST(KVCachePlannerTest, MoreBlocksThanInt32IdsNameCacheMemory) {
  const auto groups = get_kv_cache_groups({{"layer0", full32k()}, {"layer1", full32k()}});
  const std::string message = error_of(
      [&] { get_kv_cache_config_from_groups(groups, ~std::uint64_t{0}, KVCacheLayout::LBNHC); });
  EXPECT_NE(message.find("cache.memory: "), std::string::npos) << message;
  EXPECT_NE(message.find("more than the 2147483647 block ids of int32 block tables"),
            std::string::npos)
      << message;
  // The largest budget the message suggests is accepted: exactly 2^31 - 1 blocks.
  const std::uint64_t largest = 2147483647ull * 64 * kKiB;
  EXPECT_EQ(get_kv_cache_config_from_groups(groups, largest, KVCacheLayout::LBNHC).num_blocks,
            2147483647);
}

TEST(KVCachePlannerTest, BackingPastInt64OffsetsNamesCacheMemory) {
  // 2^33-byte pages: 2^64 - 1 bytes hold 2^31 - 1 blocks (int32 ids), ~2^64 bytes in all.
  const KVCacheSpec big = KVCacheSpec::full(1 << 12, 1 << 10, 1 << 9, DType::bf16);
  ASSERT_EQ(big.page_size_bytes(), std::int64_t{1} << 33);
  const std::string message = error_of([&] {
    get_kv_cache_config_from_groups({{{"a"}, big}}, ~std::uint64_t{0}, KVCacheLayout::LBNHC);
  });
  EXPECT_NE(message.find("cache.memory: 2147483647 blocks"), std::string::npos) << message;
  EXPECT_NE(message.find("past the int64 byte offsets"), std::string::npos) << message;
}

TEST(KVCachePlannerTest, EmptyHandBuiltPageIsRefusedNotDividedBy) {
  KVCacheSpec empty = full32k();
  empty.num_kv_heads = 0;
  const std::string message = error_of([&] {
    get_kv_cache_config_from_groups({{{"a"}, empty}}, kGiB, KVCacheLayout::LBNHC);
  });
  EXPECT_NE(message.find("has an empty page"), std::string::npos) << message;
  // Grouping with a larger page divides by it, too.
  EXPECT_NE(error_of([&] {
              get_kv_cache_groups({{"a", empty}, {"b", full32k()}});
            }).find("layer a has an empty KV cache page"),
            std::string::npos);
}

// 100 000 layers with 100 000 distinct specs: bucketing by spec stays linear.
TEST(KVCachePlannerTest, AsManySpecsAsLayersGroupQuickly) {
  LayerSpecs specs;
  for (int i = 0; i < 100000; ++i) {
    specs.emplace_back(name(i), KVCacheSpec::sliding(16, 8, 64, DType::bf16, i + 1));
  }
  const auto groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 100000u);
  EXPECT_EQ(groups[99999].layer_names, names({99999}));
  EXPECT_EQ(groups[99999].kv_cache_spec.sliding_window, 100000);
}

}  // namespace
}  // namespace attnrt
