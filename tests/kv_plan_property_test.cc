// Property test of the whole planning path: random layer stacks (sharing, windows, chunks, MLA,
// head sizes, dtypes, block sizes, layouts, kernel-block splits) are planned, allocated and bound,
// and the invariants of DESIGN.md §3 (Memory) are checked on every one.

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt {
namespace {

template <typename T>
T pick(std::mt19937& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<std::size_t> index(0, values.size() - 1);
  return *(values.begin() + index(rng));
}

LayerConfig random_layer(std::mt19937& rng, int index, bool mla) {
  LayerConfig layer;
  layer.name = "layers." + std::to_string(index);
  if (mla) {
    layer.type = AttentionType::mla;
    layer.num_heads = pick(rng, {4, 8});
    layer.num_kv_heads = 1;
    layer.head_size = 64;
    layer.head_size_v = 48;
    return layer;
  }
  layer.type =
      pick(rng, {AttentionType::full, AttentionType::sliding_window, AttentionType::chunked_local});
  layer.num_kv_heads = pick(rng, {1, 2, 4});
  layer.num_heads = layer.num_kv_heads * pick(rng, {1, 2});
  layer.head_size = pick(rng, {16, 32, 64});
  layer.head_size_v = layer.head_size;
  if (layer.type == AttentionType::sliding_window) layer.sliding_window = pick(rng, {4, 16, 64});
  if (layer.type == AttentionType::chunked_local) layer.attention_chunk_size = pick(rng, {32, 64});
  return layer;
}

// A valid random model: sharing layers copy the shape of an earlier owning layer.
EngineConfig random_config(std::mt19937& rng) {
  EngineConfig config;
  config.model.max_model_len = 256;
  const bool mla = std::uniform_int_distribution<int>(0, 4)(rng) == 0;
  const int num_layers = std::uniform_int_distribution<int>(1, 10)(rng);
  std::vector<int> owners;
  for (int i = 0; i < num_layers; ++i) {
    const bool share = !owners.empty() && std::uniform_int_distribution<int>(0, 2)(rng) == 0;
    LayerConfig layer;
    if (share) {
      const int target =
          owners[std::uniform_int_distribution<std::size_t>(0, owners.size() - 1)(rng)];
      layer = config.model.layers[target];
      layer.name = "layers." + std::to_string(i);
      layer.kv_sharing_target = config.model.layers[target].name;
    } else {
      layer = random_layer(rng, i, mla);
      owners.push_back(i);
    }
    config.model.layers.push_back(layer);
  }
  config.cache.block_size = pick(rng, {8, 16, 32});
  config.cache.dtype = pick(rng, {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3});
  config.cache.layout =
      pick(rng, {KVCacheLayout::LBHNC, KVCacheLayout::LBNHC, KVCacheLayout::LHBNC,
                 KVCacheLayout::BLHNC, KVCacheLayout::BLNHC, KVCacheLayout::BHLNC});
  config.cache.memory = std::uniform_int_distribution<std::uint64_t>(8 << 10, 256 << 10)(rng);
  validate_config(config);
  return config;
}

bool split_is_impossible(const KVCacheConfig& kv, std::span<const int> kernel_sizes) {
  // Only these two layouts put the head axis outside a block's page.
  const bool head_outside_page =
      kv.kv_cache_layout == KVCacheLayout::LHBNC || kv.kv_cache_layout == KVCacheLayout::BHLNC;
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    const KVCacheSpec& spec = kv.kv_cache_groups[g].kv_cache_spec;
    if (kernel_sizes[g] != spec.block_size && head_outside_page && spec.num_heads() > 1) {
      return true;
    }
  }
  return false;
}

// Marks the bytes every real kernel block of `view` addresses; fails on bytes already marked.
void mark_view_bytes(const LayerViewGeometry& view, std::int64_t num_blocks,
                     std::vector<int>& owner, int id) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(view.dtype));
  const KernelBlockGeometry& g = view.geometry;
  for (std::int64_t b = 0; b < num_blocks; ++b) {
    for (int j = 0; j < g.ratio; ++j) {
      const std::int64_t k = g.kernel_block_id(b, j);
      for (std::int64_t h = 0; h < view.shape[1]; ++h) {
        for (std::int64_t n = 0; n < view.shape[2]; ++n) {
          const std::int64_t start =
              view.byte_offset +
              (k * view.strides[0] + h * view.strides[1] + n * view.strides[2]) * element;
          for (std::int64_t c = 0; c < view.shape[3] * element; ++c) {
            ASSERT_EQ(owner.at(static_cast<std::size_t>(start + c)), 0)
                << view.layer << " overlaps another layer at byte " << start + c;
            owner[static_cast<std::size_t>(start + c)] = id;
          }
        }
      }
    }
  }
}

void check_plan(const EngineConfig& config, const KVCachePlan& plan) {
  const KVCacheConfig& kv = plan.kv_cache_config;
  // Capacity is ⌊budget / bytes per block⌋, a block holding one page per layer slot.
  const std::int64_t page = kv.kv_cache_groups.front().kv_cache_spec.page_size_bytes();
  EXPECT_EQ(kv.num_blocks,
            static_cast<std::int64_t>(config.cache.memory) / (page * kv.layer_slots));

  // Every owning layer has exactly one view; sharing layers have none of their own.
  std::multiset<std::string> viewed;
  for (const LayerViewGeometry& view : plan.views) viewed.insert(view.layer);
  std::multiset<std::string> owning;
  for (const auto& [name, spec] : plan.layer_specs) owning.insert(name);
  EXPECT_EQ(viewed, owning);

  // Views of one group never overlap.
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    std::vector<int> owner(kv.backing_bytes(), 0);
    int id = 0;
    for (const LayerViewGeometry& view : plan.views) {
      if (view.group_id == static_cast<int>(g)) mark_view_bytes(view, kv.num_blocks, owner, ++id);
    }
  }
}

void check_bound(const KVCachePlan& plan, const KVCacheAllocation& cache) {
  for (const AttentionLayer& layer : plan.forward_context.layers()) {
    ASSERT_TRUE(layer.has_kv_cache()) << layer.name();
    const Tensor& view = layer.kv_cache();
    EXPECT_EQ(view.buffer(), cache.backing);
    EXPECT_GE(view.first_byte(), 0);
    EXPECT_LE(view.end_byte(), static_cast<std::int64_t>(cache.backing->size()));
    if (layer.shares_kv()) {
      const Tensor& target = plan.forward_context.at(layer.kv_sharing_target()).kv_cache();
      EXPECT_EQ(view.byte_offset(), target.byte_offset()) << layer.name();
      EXPECT_EQ(view.shape(), target.shape());
      EXPECT_EQ(view.strides(), target.strides());
    }
  }
}

TEST(KVPlanProperty, RandomStacksKeepTheMemoryContract) {
  std::mt19937 rng(20261130);
  int planned = 0, rejected_budget = 0, rejected_split = 0;
  for (int iteration = 0; iteration < 200; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    EngineConfig config = random_config(rng);
    KVCachePlan unsplit;
    try {
      unsplit = plan_kv_cache(config);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("holds no KV cache block"), std::string::npos)
          << e.what();
      ++rejected_budget;
      continue;
    }
    std::vector<int> kernel_sizes;
    for (const KVCacheGroupSpec& group : unsplit.kv_cache_config.kv_cache_groups) {
      kernel_sizes.push_back(group.kv_cache_spec.block_size / pick(rng, {1, 2, 4}));
    }
    if (split_is_impossible(unsplit.kv_cache_config, kernel_sizes)) {
      try {
        plan_kv_cache(config, kernel_sizes);
        ADD_FAILURE() << "a split with heads outside the page was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("kernel block"), std::string::npos) << e.what();
      }
      ++rejected_split;
      continue;
    }
    KVCachePlan plan = plan_kv_cache(config, kernel_sizes);
    check_plan(config, plan);
    KVCacheAllocation cache = allocate_kv_cache(plan.kv_cache_config, Device::cpu(), kernel_sizes);
    bind_kv_caches(cache.views, plan.forward_context, plan.kv_cache_config, config);
    check_bound(plan, cache);
    ++planned;
  }
  // The generator must exercise every outcome, mostly successful plans.
  EXPECT_GT(planned, 100);
  EXPECT_GT(rejected_budget, 0);
  EXPECT_GT(rejected_split, 0);
}

// --- Hostile configs built by hand (no validate_config): an Error naming the culprit ------------

EngineConfig one_layer_config(int num_kv_heads, int head_size, int block_size, DType dtype,
                              int num_layers = 1) {
  EngineConfig config;
  for (int i = 0; i < num_layers; ++i) {
    LayerConfig layer;
    layer.name = "layers." + std::to_string(i);
    layer.num_heads = num_kv_heads;
    layer.num_kv_heads = num_kv_heads;
    layer.head_size = head_size;
    config.model.layers.push_back(layer);
  }
  config.cache.block_size = block_size;
  config.cache.dtype = dtype;
  return config;
}

std::string plan_error(const EngineConfig& config) {
  try {
    plan_kv_cache(config);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KVPlanHostile, HugeLayersAreRefusedNotDividedByZero) {
  // 2^20 KV heads × 2^20 head size × 2^20-token blocks: a 2^62-byte bf16 page (2^63 in f32).
  const std::string f32 = plan_error(one_layer_config(1 << 20, 1 << 20, 1 << 20, DType::f32));
  EXPECT_NE(f32.find("layer layers.0: KV cache page bytes"), std::string::npos) << f32;
  const std::string bf16 =
      plan_error(one_layer_config(1 << 20, 1 << 20, 1 << 20, DType::bf16, /*num_layers=*/4));
  EXPECT_NE(bf16.find("KV cache bytes per block"), std::string::npos) << bf16;
  const std::string one_layer =
      plan_error(one_layer_config(1 << 20, 1 << 20, 1 << 20, DType::bf16));
  EXPECT_NE(one_layer.find("holds no KV cache block"), std::string::npos) << one_layer;
}

TEST(KVPlanHostile, MemoryOfTwoToTheSixtyFourIsRefusedNamingCacheMemory) {
  EngineConfig config = one_layer_config(8, 64, 16, DType::bf16);
  config.cache.memory = ~std::uint64_t{0};
  const std::string message = plan_error(config);
  EXPECT_EQ(message.rfind("cache.memory: ", 0), 0u) << message;
  EXPECT_NE(message.find("int32 block tables"), std::string::npos) << message;
}

// 100 000 layers, every second one sharing the previous one's cache: the plan walks each layer a
// constant number of times (a layer-name scan per layer took 25 s here).
TEST(KVPlanHostile, AHundredThousandLayersWithSharingPlanInLinearTime) {
  EngineConfig config = one_layer_config(8, 64, 16, DType::bf16, 100000);
  for (int i = 1; i < 100000; i += 2) {
    config.model.layers[i].kv_sharing_target = config.model.layers[i - 1].name;
  }
  config.cache.memory = std::uint64_t{64} << 30;
  const KVCachePlan plan = plan_kv_cache(config);
  ASSERT_EQ(plan.kv_cache_config.kv_cache_groups.size(), 1u);
  EXPECT_EQ(plan.kv_cache_config.kv_cache_groups[0].layer_names.size(), 100000u);
  EXPECT_EQ(plan.views.size(), 50000u);
  EXPECT_EQ(plan.kv_cache_config.num_blocks, 41);  // 64 GiB / (50 000 × 32 KiB)
}

}  // namespace
}  // namespace attnrt
