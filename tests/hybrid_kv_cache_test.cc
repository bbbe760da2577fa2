// State specs in the KV cache plan, on the numbers of vLLM's tests/v1/core/test_kv_cache_utils.py
// (its new_mamba_spec: shapes ((2, 512), (3, 32, 32)) float32, 2 speculative blocks, a 16 KiB
// page) and its hybrid cases that attnrt's specs can express: page unification with state pages,
// the Kimi-Linear-like grouping, the group-size rule, an infeasible page, the auto-fit length.

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/kv/hybrid_block_size.h"
#include "attnrt/kv/kv_cache_capacity.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

// vLLM's new_mamba_spec(): 1024 + 3072 float32 values = 16384 bytes.
KVCacheSpec new_mamba_spec(int block_size = 16,
                           std::vector<StateTensor> states = {{{2, 512}, DType::f32},
                                                              {{3, 32, 32}, DType::f32}},
                           int num_speculative_blocks = 2) {
  return KVCacheSpec::state(KVSpecKind::mamba, block_size, std::move(states),
                            num_speculative_blocks);
}

// vLLM's new_kv_cache_spec(): block 16, 2 KV heads of 64, float32 = 16384 bytes.
KVCacheSpec new_kv_cache_spec(int block_size = 16, int num_kv_heads = 2) {
  return KVCacheSpec::full(block_size, num_kv_heads, 64, DType::f32);
}

const KVCacheSpec& spec_of(const std::vector<KVCacheGroupSpec>& groups, const std::string& layer) {
  for (const KVCacheGroupSpec& group : groups) {
    if (std::ranges::find(group.layer_names, layer) != group.layer_names.end()) {
      return group.kv_cache_spec;
    }
  }
  throw std::runtime_error("no group holds " + layer);
}

EngineConfig config_with_max_model_len(int max_model_len) {
  EngineConfig config;
  config.model.max_model_len = max_model_len;
  return config;
}

TEST(HybridKVCache, MambaSpecPageAndBlocksPerRequest) {
  const KVCacheSpec mamba = new_mamba_spec();
  EXPECT_EQ(mamba.page_size_bytes(), 16384);
  EXPECT_TRUE(mamba.is_state());
  EXPECT_EQ(mamba.num_heads(), 1);
  EXPECT_EQ(mamba.num_states(), 1);
  // test_uniform_type_spec_block_table_width_matches_layer_spec: a mamba request holds
  // 1 + num_speculative_blocks blocks ("none" mode), whatever its length.
  EXPECT_EQ(mamba.max_num_blocks_per_req(1024), 3);
  EXPECT_EQ(mamba.max_memory_usage_bytes(config_with_max_model_len(1024)), 3 * 16384);
  EXPECT_EQ(mamba.max_memory_usage_bytes(config_with_max_model_len(1 << 20)), 3 * 16384);
  // The page does not depend on the block size, and a padded page keeps its padding.
  KVCacheSpec padded = mamba;
  padded.page_size_padded = 32768;
  EXPECT_EQ(padded.with_block_size(544).page_size_bytes(), 32768);
  EXPECT_EQ(padded.with_block_size(544).block_size, 544);
  EXPECT_EQ(mamba.describe(),
            "mamba(block 16, state (2, 512) float32 + (3, 32, 32) float32, 2 draft blocks, page "
            "16 KiB)");
  EXPECT_NE(KVCacheSpecHash{}(mamba),
            KVCacheSpecHash{}(new_mamba_spec(16, {{{2, 512}, DType::f32}})));
}

TEST(HybridKVCache, HiddenStateCaseHasEqualPagesAtBlock544) {
  // test_hidden_state_group_preserves_hybrid_prefix_cache_granularity: a full layer of 544 tokens,
  // 1 head of 512, bf16 and a state of 557056 bf16 values both take 1114112 bytes.
  const KVCacheSpec full = KVCacheSpec::full(544, 1, 512, DType::bf16);
  const KVCacheSpec state = new_mamba_spec(544, {{{557056}, DType::bf16}}, 0);
  EXPECT_EQ(full.page_size_bytes(), 1114112);
  EXPECT_EQ(state.page_size_bytes(), full.page_size_bytes());
}

TEST(HybridKVCache, UnifyPadsSmallerStatePagesAndGrowsAttentionBlocks) {
  // test_unify_kv_cache_spec_page_size_mamba, case 1: the 32 KiB draft page is the largest; the
  // mamba page is padded to it (block size kept), the main attention block doubles.
  const LayerSpecs specs = {{"mamba", new_mamba_spec()},
                            {"main_attn", new_kv_cache_spec()},
                            {"draft_attn", new_kv_cache_spec(16, 4)}};
  ASSERT_EQ(specs[2].second.page_size_bytes(), 32768);
  const std::vector<KVCacheGroupSpec> groups = get_kv_cache_groups(specs);
  const KVCacheSpec& mamba = spec_of(groups, "mamba");
  EXPECT_EQ(mamba.page_size_bytes(), 32768);
  EXPECT_EQ(mamba.page_size_padded, 32768);
  EXPECT_EQ(mamba.block_size, 16);
  const KVCacheSpec& main_attn = spec_of(groups, "main_attn");
  EXPECT_EQ(main_attn.page_size_bytes(), 32768);
  EXPECT_EQ(main_attn.block_size, 32);
  EXPECT_FALSE(main_attn.page_size_padded.has_value());
  EXPECT_EQ(spec_of(groups, "draft_attn"), specs[2].second);

  // Case 2: a page already padded to 16 KiB is padded again to 32 KiB.
  KVCacheSpec prepadded = new_mamba_spec(16, {{{2, 256}, DType::f32}, {{3, 32, 32}, DType::f32}});
  prepadded.page_size_padded = 16384;
  const std::vector<KVCacheGroupSpec> padded =
      get_kv_cache_groups({{"mamba", prepadded}, {"draft_attn", new_kv_cache_spec(16, 4)}});
  EXPECT_EQ(spec_of(padded, "mamba").page_size_bytes(), 32768);
  EXPECT_EQ(spec_of(padded, "mamba").page_size_padded, 32768);

  // Case 3: a 24 KiB state page that does not divide 32 KiB is padded all the same.
  const KVCacheSpec odd = new_mamba_spec(16, {{{6144}, DType::f32}});
  ASSERT_EQ(odd.page_size_bytes(), 24576);
  const std::vector<KVCacheGroupSpec> odd_groups =
      get_kv_cache_groups({{"mamba", odd}, {"draft_attn", new_kv_cache_spec(16, 4)}});
  EXPECT_EQ(spec_of(odd_groups, "mamba").page_size_bytes(), 32768);

  // Case 5: equal pages are left as they are.
  const std::vector<KVCacheGroupSpec> equal =
      get_kv_cache_groups({{"mamba", new_mamba_spec()}, {"attn", new_kv_cache_spec()}});
  EXPECT_EQ(spec_of(equal, "mamba"), new_mamba_spec());
  EXPECT_EQ(spec_of(equal, "attn"), new_kv_cache_spec());
}

// test_get_kv_cache_config_mamba_hybrid_sharing_no_indexer (Kimi-Linear-like): 27 layers, MLA
// (block 1024, latent 576, bf16) at i % 4 == 3 and at i == 26, new_mamba_spec() elsewhere.
LayerSpecs kimi_linear_like() {
  LayerSpecs specs;
  for (int i = 0; i < 27; ++i) {
    if (i % 4 == 3 || i == 26) {
      specs.emplace_back("layers." + std::to_string(i) + ".attn",
                         KVCacheSpec::mla(1024, 576, DType::bf16));
    } else {
      specs.emplace_back("layers." + std::to_string(i) + ".linear_attn", new_mamba_spec());
    }
  }
  return specs;
}

TEST(HybridKVCache, KimiLinearLikeGroupsStateLayersInSlotsOfTheMlaLayers) {
  const LayerSpecs specs = kimi_linear_like();
  const std::int64_t mla_page = 1024 * 576 * 2;
  ASSERT_EQ(specs[3].second.page_size_bytes(), mla_page);
  std::vector<KVCacheGroupSpec> groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 4u);  // the 7 MLA layers, then the 20 mamba layers in groups of 7
  EXPECT_EQ(groups[0].kv_cache_spec.kind, KVSpecKind::mamba);  // buckets in first-seen order
  std::vector<std::size_t> mamba_sizes;
  for (const KVCacheGroupSpec& group : groups) {
    EXPECT_EQ(group.kv_cache_spec.page_size_bytes(), mla_page);
    if (group.kv_cache_spec.is_state()) {
      mamba_sizes.push_back(group.layer_names.size());
    } else {
      EXPECT_EQ(group.layer_names.size(), 7u);
    }
  }
  EXPECT_EQ(mamba_sizes, (std::vector<std::size_t>{7, 7, 6}));
  // Round robin: group k takes mamba layers k, k + 3, ...
  EXPECT_EQ(groups[0].layer_names.front(), "layers.0.linear_attn");
  EXPECT_EQ(groups[1].layer_names.front(), "layers.1.linear_attn");
  EXPECT_EQ(groups[2].layer_names.front(), "layers.2.linear_attn");

  const std::uint64_t bytes_per_block = kv_cache_bytes_per_block(groups);
  EXPECT_EQ(bytes_per_block, 7u * mla_page);
  const KVCacheConfig config =
      get_kv_cache_config_from_groups(groups, bytes_per_block * 100 + 1, KVCacheLayout::LBNHC);
  EXPECT_EQ(config.num_blocks, 100);
  ASSERT_EQ(config.kv_cache_tensors.size(), 4u);
  for (const KVCacheTensor& tensor : config.kv_cache_tensors) {
    EXPECT_EQ(tensor.size, bytes_per_block * 100);
  }
  // A request of 8192 tokens: 8 MLA blocks and 1 + 2 blocks in each of the 3 mamba groups.
  const BlocksPerRequest blocks = blocks_per_request(config, config_with_max_model_len(8192));
  EXPECT_EQ(blocks.attention, 8u);
  EXPECT_EQ(blocks.state, 9u);
  EXPECT_EQ(blocks.limited_by(), "state blocks");
  EXPECT_DOUBLE_EQ(max_concurrency(config, config_with_max_model_len(8192)), 100.0 / 17.0);
  EXPECT_EQ(tokens_capacity(config), 100 * 1024);  // the MLA group's blocks only
}

TEST(HybridKVCache, GroupSizeRuleWithoutOverride) {
  // test_hybrid_group_size_override_preserves_spec_compatibility, group size None: 24 GDN layers,
  // 8 full target layers, 5 sliding and 1 full draft layers, all 64 KiB pages. The smallest
  // bucket holds one layer and the largest is more than 1.5x it: 38 groups of one layer.
  const KVCacheSpec full = KVCacheSpec::full(16, 4, 256, DType::bf16);
  ASSERT_EQ(full.page_size_bytes(), 65536);
  const KVCacheSpec draft = KVCacheSpec::full(16, 8, 128, DType::bf16);
  const KVCacheSpec sliding = KVCacheSpec::sliding(16, 8, 128, DType::bf16, 4096);
  KVCacheSpec gdn = KVCacheSpec::state(KVSpecKind::linear_attention, 16, {{{128}, DType::f32}});
  gdn.page_size_padded = full.page_size_bytes();
  LayerSpecs specs;
  for (int i = 0; i < 24; ++i) specs.emplace_back("gdn." + std::to_string(i), gdn);
  for (int i = 0; i < 8; ++i) specs.emplace_back("target." + std::to_string(i), full);
  for (int i = 0; i < 5; ++i) specs.emplace_back("draft_sw." + std::to_string(i), sliding);
  specs.emplace_back("draft_full.0", draft);
  const std::vector<KVCacheGroupSpec> groups = get_kv_cache_groups(specs);
  ASSERT_EQ(groups.size(), 38u);
  for (const KVCacheGroupSpec& group : groups) {
    ASSERT_EQ(group.layer_names.size(), 1u);
    const std::string& layer = group.layer_names.front();
    const auto entry = std::ranges::find(specs, layer, &LayerSpecs::value_type::first);
    EXPECT_EQ(group.kv_cache_spec, entry->second);
  }
}

TEST(HybridKVCache, AStatePageBeyondAnMlaPageThatDoesNotDivideIsRefused) {
  // test_get_kv_cache_config_mamba_hybrid_sharing_infeasible_no_indexer: a 2 MiB state page is
  // the largest, and the 1.125 MiB MLA page neither divides it nor can be padded.
  LayerSpecs specs = kimi_linear_like();
  const KVCacheSpec big = new_mamba_spec(16, {{{512, 1024}, DType::f32}});
  for (auto& [layer, spec] : specs) {
    if (spec.is_state()) spec = big;
  }
  ASSERT_GT(big.page_size_bytes(), 1024 * 576 * 2);
  const std::string message = error_of([&] { (void)get_kv_cache_groups(specs); });
  EXPECT_NE(message.find("page size"), std::string::npos) << message;
  EXPECT_NE(message.find("layers.3.attn"), std::string::npos) << message;
}

TEST(HybridKVCache, AutoFitLengthCountsTheStateBlocks) {
  // test_auto_fit_max_model_len_with_hybrid: mamba (2 draft blocks) + one full layer, 68 blocks of
  // 16 KiB. vLLM first reserves the null block, then 64 attention blocks (1024 tokens) and
  // 1 + 2 state blocks fit; attnrt's check takes the budget after the null block.
  const LayerSpecs specs = {{"layer_1", new_mamba_spec()}, {"layer_2", new_kv_cache_spec()}};
  const std::uint64_t budget_after_null_block = 16384u * (1024 / 16 + 1 + 2);
  EXPECT_EQ(estimate_max_model_len(specs, config_with_max_model_len(8192), budget_after_null_block),
            1024);
}

TEST(HybridKVCache, AlignHybridSpecsRaisesAttentionAndPadsState) {
  // Qwen3-Next on one rank: 2 KV heads of 256 (bf16), Gated DeltaNet state 1097728 bytes.
  LayerSpecs specs = {
      {"linear", KVCacheSpec::state(KVSpecKind::linear_attention, 16,
                                    {{{3, 8192}, DType::bf16}, {{32, 128, 128}, DType::bf16}})},
      {"full", KVCacheSpec::full(16, 2, 256, DType::bf16)}};
  const std::optional<HybridBlockSize> aligned = align_hybrid_kv_cache_specs(specs, 16);
  ASSERT_TRUE(aligned.has_value());
  EXPECT_EQ(aligned->block_size, 544);
  EXPECT_EQ(specs[1].second.block_size, 544);
  EXPECT_EQ(specs[1].second.page_size_bytes(), 1114112);
  EXPECT_EQ(specs[0].second.page_size_bytes(), 1114112);
  EXPECT_EQ(specs[0].second.real_page_size_bytes(), 1097728);
  // Attention alone, or state alone, is left as it is.
  LayerSpecs attention_only = {{"full", KVCacheSpec::full(16, 2, 256, DType::bf16)}};
  EXPECT_FALSE(align_hybrid_kv_cache_specs(attention_only, 16).has_value());
  EXPECT_EQ(attention_only[0].second.block_size, 16);
}

TEST(HybridKVCache, BadStateSpecsAreRefused) {
  EXPECT_NE(error_of([] {
              (void)KVCacheSpec::state(KVSpecKind::full, 16, {{{1}, DType::f32}});
            }).find("not a state kind"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)KVCacheSpec::state(KVSpecKind::mamba, 16, {});
            }).find("no state tensors"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)new_mamba_spec(16, {{{2, 512}, DType::f32}}, -1);
            }).find("num_speculative_blocks"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
