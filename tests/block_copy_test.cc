// copy_kv_cache_blocks (SEMANTICS §3.5 "Block copy", §8.7): whole manager blocks move, in every
// layout, with and without kernel-block splitting, and padding bytes are never touched.

#include "attnrt/kv/block_copy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

// One group placed as the planner does: size G*P*num_blocks, strides of compute_layout_strides.
KVCacheConfig one_group_config(const KVCacheSpec& spec, std::int64_t num_blocks, int num_layers,
                               KVCacheLayout layout) {
  std::vector<std::string> names;
  for (int l = 0; l < num_layers; ++l) names.push_back("layer" + std::to_string(l));
  const auto strides = compute_layout_strides(spec, num_blocks, num_layers, layout);
  KVCacheConfig config;
  config.num_blocks = num_blocks;
  config.kv_cache_layout = layout;
  config.layer_slots = num_layers;
  config.kv_cache_groups.push_back({names, spec});
  config.kv_cache_tensors.push_back(
      {static_cast<std::uint64_t>(num_layers * spec.page_size_bytes() * num_blocks), names,
       strides[kv_axis::L], strides[kv_axis::B], 0});
  return config;
}

// Contents of one kernel block of a view, [H, N, C] flattened.
std::vector<float> kernel_block(const Tensor& view, std::int64_t id) {
  std::vector<float> values;
  for (std::int64_t h = 0; h < view.size(1); ++h) {
    for (std::int64_t n = 0; n < view.size(2); ++n) {
      for (std::int64_t c = 0; c < view.size(3); ++c)
        values.push_back(view.at<float>({id, h, n, c}));
    }
  }
  return values;
}

// Writes a value unique to (layer, kernel block, h, n, c) into every kernel block of every block.
void fill_distinct(const KVCacheAllocation& cache) {
  float layer_base = 0;
  for (const auto& [name, view] : cache.views) {
    const KernelBlockGeometry& geometry = cache.geometry.at(name);
    layer_base += 100000;
    for (std::int64_t block = 0; block < cache.num_blocks; ++block) {
      for (int j = 0; j < geometry.ratio; ++j) {
        const std::int64_t id = geometry.kernel_block_id(block, j);
        for (std::int64_t h = 0; h < view.size(1); ++h) {
          for (std::int64_t n = 0; n < view.size(2); ++n) {
            for (std::int64_t c = 0; c < view.size(3); ++c) {
              view.at<float>({id, h, n, c}) =
                  layer_base + static_cast<float>(id * 1000 + h * 100 + n * 10 + c);
            }
          }
        }
      }
    }
  }
}

using Snapshot = std::map<std::string, std::map<std::int64_t, std::vector<float>>>;

// Every layer's kernel blocks, keyed by kernel id.
Snapshot snapshot(const KVCacheAllocation& cache) {
  Snapshot result;
  for (const auto& [name, view] : cache.views) {
    const KernelBlockGeometry& geometry = cache.geometry.at(name);
    for (std::int64_t block = 0; block < cache.num_blocks; ++block) {
      for (int j = 0; j < geometry.ratio; ++j) {
        const std::int64_t id = geometry.kernel_block_id(block, j);
        result[name][id] = kernel_block(view, id);
      }
    }
  }
  return result;
}

// After copying manager block 0 onto 2: block 2 holds old block 0, every other block is unchanged.
void expect_block_zero_copied_to_two(const KVCacheAllocation& cache, const Snapshot& before) {
  const Snapshot after = snapshot(cache);
  for (const auto& [name, view] : cache.views) {
    const KernelBlockGeometry& geometry = cache.geometry.at(name);
    for (std::int64_t block = 0; block < cache.num_blocks; ++block) {
      for (int j = 0; j < geometry.ratio; ++j) {
        const std::int64_t id = geometry.kernel_block_id(block, j);
        const std::int64_t source = block == 2 ? geometry.kernel_block_id(0, j) : id;
        EXPECT_EQ(after.at(name).at(id), before.at(name).at(source))
            << name << " block " << block << " kernel block " << id;
      }
    }
  }
}

const std::vector<BlockCopy> kZeroToTwo = {{0, 2}};

TEST(BlockCopyTest, CopiesBlockZeroOntoTwoInEveryLayout) {
  // 2 heads: in LHBNC and BHLNC every head of the block lives in its own page.
  const KVCacheSpec spec = KVCacheSpec::full(4, 2, 2, DType::f32);
  for (KVCacheLayout layout : kAllLayouts) {
    SCOPED_TRACE(layout_name(layout));
    const KVCacheAllocation cache =
        allocate_kv_cache(one_group_config(spec, 4, 2, layout), Device::cpu());
    fill_distinct(cache);
    const Snapshot before = snapshot(cache);
    ASSERT_NE(before.at("layer1").at(0), before.at("layer1").at(2));
    copy_kv_cache_blocks(cache, kZeroToTwo);
    expect_block_zero_copied_to_two(cache, before);
  }
}

TEST(BlockCopyTest, SplitBlocksMoveAllTheirKernelBlocks) {
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  const std::vector<int> kernel_sizes = {2};  // ratio 2
  struct Case {
    KVCacheLayout layout;
    int num_layers;
    std::int64_t first_kernel_id_of_block_two;
  };
  // Dense ids move kernel blocks 0,1 onto 4,5; BLHNC/BLNHC with 2 layers space them 4 apart.
  for (const Case& c : {Case{KVCacheLayout::LBHNC, 2, 4}, Case{KVCacheLayout::BLHNC, 1, 4},
                        Case{KVCacheLayout::BLHNC, 2, 8}, Case{KVCacheLayout::BLNHC, 2, 8}}) {
    SCOPED_TRACE(fmt::format("{} with {} layers", layout_name(c.layout), c.num_layers));
    const KVCacheAllocation cache = allocate_kv_cache(
        one_group_config(spec, 4, c.num_layers, c.layout), Device::cpu(), kernel_sizes);
    const KernelBlockGeometry& geometry = cache.geometry.at("layer0");
    EXPECT_EQ(geometry.kernel_block_id(2, 0), c.first_kernel_id_of_block_two);
    EXPECT_EQ(geometry.kernel_block_id(2, 1), c.first_kernel_id_of_block_two + 1);
    fill_distinct(cache);
    const Snapshot before = snapshot(cache);
    copy_kv_cache_blocks(cache, kZeroToTwo);
    expect_block_zero_copied_to_two(cache, before);
  }
}

TEST(BlockCopyTest, PaddingBytesAreNeverTouched) {
  // Real page 64 bytes, padded 96, ratio 2: kernel pages at 0 and 32, padding at 64..95.
  KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  spec.page_size_padded = 96;
  const std::vector<int> kernel_sizes = {2};
  const KVCacheAllocation cache = allocate_kv_cache(
      one_group_config(spec, 3, 1, KVCacheLayout::LBHNC), Device::cpu(), kernel_sizes);
  std::byte* bytes = cache.backing->data();
  for (std::int64_t page = 0; page < 3; ++page) std::memset(bytes + page * 96 + 64, 0xAB, 32);
  fill_distinct(cache);
  const Snapshot before = snapshot(cache);
  copy_kv_cache_blocks(cache, kZeroToTwo);
  expect_block_zero_copied_to_two(cache, before);
  EXPECT_EQ(std::memcmp(bytes + 2 * 96, bytes, 64), 0);
  for (std::int64_t page = 0; page < 3; ++page) {
    for (std::int64_t b = 64; b < 96; ++b) EXPECT_EQ(bytes[page * 96 + b], std::byte{0xAB});
  }
}

TEST(BlockCopyTest, CopiesApplyInOrder) {
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  const KVCacheAllocation cache =
      allocate_kv_cache(one_group_config(spec, 4, 1, KVCacheLayout::LBNHC), Device::cpu());
  fill_distinct(cache);
  const Snapshot before = snapshot(cache);
  const std::vector<BlockCopy> chain = {{0, 1}, {1, 3}, {2, 2}};
  copy_kv_cache_blocks(cache, chain);
  const Snapshot after = snapshot(cache);
  EXPECT_EQ(after.at("layer0").at(1), before.at("layer0").at(0));
  EXPECT_EQ(after.at("layer0").at(3), before.at("layer0").at(0));
  EXPECT_EQ(after.at("layer0").at(2), before.at("layer0").at(2));
  copy_kv_cache_blocks(cache, {});
  EXPECT_EQ(snapshot(cache), after);
}

TEST(BlockCopyTest, RejectsOutOfRangeIdsBeforeCopying) {
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  const KVCacheAllocation cache =
      allocate_kv_cache(one_group_config(spec, 4, 2, KVCacheLayout::LBHNC), Device::cpu());
  fill_distinct(cache);
  const Snapshot before = snapshot(cache);
  for (const std::vector<BlockCopy>& copies :
       {std::vector<BlockCopy>{{0, 1}, {1, 4}}, std::vector<BlockCopy>{{0, 1}, {-1, 2}}}) {
    try {
      copy_kv_cache_blocks(cache, copies);
      ADD_FAILURE() << "expected an Error";
    } catch (const Error& error) {
      const std::string message = error.what();
      const std::string bad = std::to_string(copies[1].src < 0 ? copies[1].src : copies[1].dst);
      EXPECT_NE(message.find("block id " + bad), std::string::npos) << message;
      EXPECT_NE(message.find("4 blocks"), std::string::npos) << message;
    }
  }
  EXPECT_EQ(snapshot(cache), before);  // block 1 was not overwritten by the valid first copy
}

TEST(BlockCopyTest, AliasedViewsAreCopiedThroughTheirTarget) {
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  KVCacheAllocation cache =
      allocate_kv_cache(one_group_config(spec, 4, 2, KVCacheLayout::BLHNC), Device::cpu());
  fill_distinct(cache);
  const Snapshot before = snapshot(cache);
  cache.views.emplace("a_shared", cache.views.at("layer1"));  // KV sharing: no geometry of its own
  copy_kv_cache_blocks(cache, kZeroToTwo);
  cache.views.erase("a_shared");
  expect_block_zero_copied_to_two(cache, before);

  cache.views.emplace("stray", cache.views.at("layer1").slice(0, 1, 3));
  EXPECT_THROW(copy_kv_cache_blocks(cache, kZeroToTwo), Error);
}

}  // namespace
}  // namespace attnrt
