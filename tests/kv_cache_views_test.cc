// Kernel-block geometry, per-layer view planning and allocation (SEMANTICS §0, §3.3, §3.5, §8.6,
// §8.7). Configs are built by hand the way the planner places layers: one tensor per group,
// size G*P*num_blocks, offset 0, layer/block strides from compute_layout_strides.

#include "attnrt/kv/kv_cache_views.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

KVCacheTensor place_group(const KVCacheSpec& spec, std::int64_t num_blocks, int layer_slots,
                          KVCacheLayout layout, std::vector<std::string> layers) {
  const auto strides = compute_layout_strides(spec, num_blocks, layer_slots, layout);
  return KVCacheTensor{
      static_cast<std::uint64_t>(layer_slots * spec.page_size_bytes() * num_blocks),
      std::move(layers), strides[kv_axis::L], strides[kv_axis::B], 0};
}

std::vector<std::string> layer_names(int num_layers, const std::string& prefix = "layer") {
  std::vector<std::string> names;
  for (int l = 0; l < num_layers; ++l) names.push_back(prefix + std::to_string(l));
  return names;
}

KVCacheConfig one_group_config(const KVCacheSpec& spec, std::int64_t num_blocks, int num_layers,
                               KVCacheLayout layout) {
  KVCacheConfig config;
  config.num_blocks = num_blocks;
  config.kv_cache_layout = layout;
  config.layer_slots = num_layers;
  config.kv_cache_groups.push_back({layer_names(num_layers), spec});
  config.kv_cache_tensors.push_back(
      place_group(spec, num_blocks, num_layers, layout, layer_names(num_layers)));
  return config;
}

std::vector<std::int64_t> dims(std::initializer_list<std::int64_t> values) {
  return values;
}

std::int64_t offset_in_backing(const Tensor& view) {
  return view.data() - view.buffer()->data();
}

TEST(KernelBlockGeometryTest, UnsplitIsTheIdentity) {
  const KernelBlockGeometry geometry = KernelBlockGeometry::unsplit(16);
  EXPECT_EQ(geometry, (KernelBlockGeometry{16, 16, 1, 1}));
  EXPECT_TRUE(geometry.dense());
  EXPECT_EQ(geometry.num_kernel_blocks(5), 5);
  EXPECT_EQ(geometry.num_kernel_blocks(0), 0);
  EXPECT_EQ(geometry.map_to_kernel_slot(37), 37);
}

TEST(KernelBlockGeometryTest, DenseSplitKeepsSlotsAndExpandsIds) {
  const KernelBlockGeometry geometry{32, 16, 2, 2};
  EXPECT_FALSE(geometry.needs_slot_translation());
  for (std::int64_t slot = 0; slot < 128; ++slot)
    EXPECT_EQ(geometry.map_to_kernel_slot(slot), slot);
  // SEMANTICS §3.3: ids [0,1,2], ratio 2 → [0..5].
  const std::vector<std::int32_t> ids = {0, 1, 2};
  std::vector<std::int32_t> kernel_ids(6);
  geometry.expand_block_ids(ids, kernel_ids);
  EXPECT_EQ(kernel_ids, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(geometry.num_kernel_blocks(3), 6);
}

TEST(KernelBlockGeometryTest, SpacedIdsTranslateSlots) {
  // BLHNC-like: 2 layers in a block row, ratio 4 → 8 kernel-block strides per manager block.
  const KernelBlockGeometry geometry{16, 4, 4, 8};
  EXPECT_TRUE(geometry.needs_slot_translation());
  // Slot 2*16 + 5: block 2, kernel block 1 (id 17), offset 1.
  EXPECT_EQ(geometry.map_to_kernel_slot(37), 17 * 4 + 1);
  EXPECT_EQ(geometry.map_to_kernel_slot(15), 3 * 4 + 3);
  EXPECT_EQ(geometry.map_to_kernel_slot(-1), -1);
  std::vector<std::int64_t> slots = {0, 16, -1, 47};
  geometry.map_to_kernel_slot_mapping(slots);
  EXPECT_EQ(slots, (std::vector<std::int64_t>{0, 32, -1, 79}));
  EXPECT_EQ(geometry.num_kernel_blocks(3), 20);
  EXPECT_EQ(geometry.num_kernel_blocks(1), 4);
}

TEST(KernelBlockGeometryTest, ExpandRejectsAWrongOutputSize) {
  const KernelBlockGeometry geometry{16, 4, 4, 8};
  const std::vector<std::int32_t> ids = {1, 2};
  std::vector<std::int32_t> out(7);
  EXPECT_THROW(geometry.expand_block_ids(ids, out), Error);
}

TEST(KernelBlockGeometryTest, ExpandRefusesIdsPastInt32AndSixtyFourBits) {
  const KernelBlockGeometry spaced{16, 8, 2, std::int64_t{1} << 40};
  std::vector<std::int32_t> out(2);
  const auto expand = [&](std::int32_t id) {
    const std::vector<std::int32_t> ids = {id};
    return error_of([&] { spaced.expand_block_ids(ids, out); });
  };
  EXPECT_NE(expand(3).find("does not fit a 32-bit block table"), std::string::npos);
  EXPECT_NE(expand(1 << 30).find("does not fit in 64 bits"), std::string::npos);
  EXPECT_NE(expand(-1).find("kernel block id"), std::string::npos);
  EXPECT_EQ(spaced.num_kernel_blocks(1), 2);
  EXPECT_NE(error_of([&] {
              spaced.num_kernel_blocks(std::int64_t{1} << 30);
            }).find("kernel blocks of the KV cache view"),
            std::string::npos);
}

TEST(KernelBlockGeometryTest, GeometryOfEachPlacement) {
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);  // page 256 bytes
  for (KVCacheLayout layout : kAllLayouts) {
    SCOPED_TRACE(layout_name(layout));
    const KVCacheTensor tensor = place_group(spec, 3, 2, layout, layer_names(2));
    // Layer-outermost layouts keep one page per block: dense. Block-outermost rows hold 2 pages.
    const std::int64_t slots = is_block_outermost(layout) ? 8 : 4;
    EXPECT_EQ(get_kernel_block_geometry(spec, tensor, layout, 4),
              (KernelBlockGeometry{16, 4, 4, slots}));
    EXPECT_EQ(get_kernel_block_geometry(spec, tensor, layout, 16),
              KernelBlockGeometry::unsplit(16));
  }
}

TEST(KernelBlockGeometryTest, RejectsPagesThatCannotBeSplit) {
  // SEMANTICS §8.7: LBHNC padded 80 with ratio 2 (kernel page 32), LHBNC with 2 heads.
  KVCacheSpec padded = KVCacheSpec::full(4, 1, 2, DType::f32);  // real page 64
  padded.page_size_padded = 80;
  const KVCacheTensor padded_tensor = place_group(padded, 3, 1, KVCacheLayout::LBHNC, {"a"});
  const std::string off_grid =
      error_of([&] { get_kernel_block_geometry(padded, padded_tensor, KVCacheLayout::LBHNC, 2); });
  EXPECT_NE(off_grid.find("kernel block"), std::string::npos) << off_grid;
  EXPECT_NE(off_grid.find("80"), std::string::npos) << off_grid;

  const KVCacheSpec two_heads = KVCacheSpec::full(4, 2, 2, DType::f32);
  const KVCacheTensor heads_tensor = place_group(two_heads, 3, 1, KVCacheLayout::LHBNC, {"a"});
  const std::string heads = error_of(
      [&] { get_kernel_block_geometry(two_heads, heads_tensor, KVCacheLayout::LHBNC, 2); });
  EXPECT_NE(heads.find("kernel block"), std::string::npos) << heads;
  EXPECT_NE(heads.find("LHBNC"), std::string::npos) << heads;
  EXPECT_NE(heads.find("LBNHC"), std::string::npos) << heads;

  const std::string not_dividing = error_of(
      [&] { get_kernel_block_geometry(two_heads, heads_tensor, KVCacheLayout::LBHNC, 3); });
  EXPECT_NE(not_dividing.find("kernel block size 3"), std::string::npos) << not_dividing;
}

TEST(KVCacheViewsTest, PaddedPageView) {
  // SEMANTICS §8.7: Full(16, 1, 2, fp32, padded 384), 3 blocks, LBHNC.
  KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  spec.page_size_padded = 384;
  const KVCacheAllocation cache =
      allocate_kv_cache(one_group_config(spec, 3, 1, KVCacheLayout::LBHNC), Device::cpu());
  const Tensor& view = cache.views.at("layer0");
  EXPECT_EQ(view.dtype(), DType::f32);
  EXPECT_EQ(view.shape(), dims({3, 1, 16, 4}));
  EXPECT_EQ(view.strides(), dims({96, 64, 4, 1}));
  EXPECT_EQ(view.select(0, 1).data_as<float>() - view.data_as<float>(), 96);
  for (std::int64_t block = 0; block < 3; ++block)
    EXPECT_TRUE(view.select(0, block).is_contiguous());
  EXPECT_EQ(cache.geometry.at("layer0"), KernelBlockGeometry::unsplit(16));
  EXPECT_EQ(cache.backing->size(), 4096u);  // 1152 bytes rounded up to 4 KiB
}

TEST(KVCacheViewsTest, CompressedMlaViews) {
  // SEMANTICS §8.7: MLA(256, head 128, bf16, tokens_per_state 4), 4 pages, LBHNC.
  KVCacheSpec spec = KVCacheSpec::mla(256, 128, DType::bf16);
  spec.tokens_per_state = 4;
  const KVCacheConfig config = one_group_config(spec, 4, 1, KVCacheLayout::LBHNC);
  EXPECT_EQ(allocate_kv_cache(config, Device::cpu()).views.at("layer0").shape(),
            dims({4, 1, 64, 128}));
  const std::vector<int> whole = {256};
  EXPECT_EQ(allocate_kv_cache(config, Device::cpu(), whole).views.at("layer0").shape(),
            dims({4, 1, 64, 128}));
  const std::vector<int> quarter = {64};
  const KVCacheAllocation split = allocate_kv_cache(config, Device::cpu(), quarter);
  const Tensor& view = split.views.at("layer0");
  EXPECT_EQ(view.shape(), dims({16, 1, 16, 128}));
  EXPECT_EQ(view.strides(), dims({2048, 2048, 128, 1}));  // a kernel page is 16*256 bytes
  EXPECT_EQ(split.geometry.at("layer0"), (KernelBlockGeometry{256, 64, 4, 4}));
}

TEST(KVCacheViewsTest, FixedBlockStrideView) {
  // SEMANTICS §8.7: LHBNC, 3 blocks, 2 layers, 2 heads, block stride S = natural + 8.
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 2, DType::f32);
  const std::int64_t s = 16 * 16 + 8;
  KVCacheConfig config = one_group_config(spec, 3, 2, KVCacheLayout::LHBNC);
  KVCacheTensor& tensor = config.kv_cache_tensors[0];
  tensor.block_stride = s;
  tensor.layer_stride = 2 * 3 * s;
  tensor.size = static_cast<std::uint64_t>(2 * tensor.layer_stride);
  const std::vector<LayerViewGeometry> views = plan_kv_cache_views(config);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].strides, (std::array<std::int64_t, 4>{s / 4, 3 * s / 4, 4, 1}));
  EXPECT_EQ(views[1].byte_offset, 6 * s);
  EXPECT_EQ(views[1].layer_slot, 1);
  const KVCacheAllocation cache = allocate_kv_cache(config, Device::cpu());
  EXPECT_EQ(offset_in_backing(cache.views.at("layer1").select(1, 1).select(0, 2)),
            6 * s + 3 * s + 2 * s);
}

// Tensors built by hand whose strides pass 64 bits (a backing that claims 2^64 - 1 bytes, so the
// end-of-backing check cannot catch them) are refused before anything is allocated.
TEST(KVCacheViewsTest, StridesPastSixtyFourBitsAreRefusedBeforeAllocating) {
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 2, DType::f32);
  KVCacheConfig config = one_group_config(spec, 3, 5, KVCacheLayout::LBNHC);
  config.kv_cache_tensors[0].size = ~std::uint64_t{0};
  config.kv_cache_tensors[0].layer_stride = std::int64_t{1} << 62;  // 5 layers span 5 × 2^62
  const std::string layers = error_of([&] { allocate_kv_cache(config, Device::cpu()); });
  EXPECT_NE(layers.find("KV cache byte stride"), std::string::npos) << layers;

  config = one_group_config(spec, 5, 1, KVCacheLayout::LBNHC);
  config.kv_cache_tensors[0].size = ~std::uint64_t{0};
  config.kv_cache_tensors[0].block_stride = std::int64_t{1} << 62;  // 5 blocks span 2^64 + ...
  const std::string stride = error_of([&] { allocate_kv_cache(config, Device::cpu()); });
  EXPECT_NE(stride.find("KV cache byte stride"), std::string::npos) << stride;
}

TEST(KVCacheViewsTest, SpacedKernelIdsAddressTheRightPages) {
  // SEMANTICS §8.6: BLHNC, 3 blocks, 2 layers, ratio 4 → slots_per_block 8.
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);  // page 256, kernel page 64
  const std::int64_t page = 256, row = 512;
  const std::vector<int> kernel_sizes = {4};
  const KVCacheAllocation cache = allocate_kv_cache(
      one_group_config(spec, 3, 2, KVCacheLayout::BLHNC), Device::cpu(), kernel_sizes);
  const KernelBlockGeometry& geometry = cache.geometry.at("layer1");
  EXPECT_EQ(geometry, (KernelBlockGeometry{16, 4, 4, 8}));
  const std::vector<std::int32_t> manager_ids = {2, 0};
  std::vector<std::int32_t> kernel_ids(8);
  geometry.expand_block_ids(manager_ids, kernel_ids);
  EXPECT_EQ(kernel_ids, (std::vector<std::int32_t>{16, 17, 18, 19, 0, 1, 2, 3}));
  for (int layer = 0; layer < 2; ++layer) {
    const Tensor& view = cache.views.at("layer" + std::to_string(layer));
    ASSERT_EQ(view.shape(), dims({20, 1, 4, 4}));
    for (std::int64_t id = 0; id < 20; ++id) {
      if (id % 8 >= 4) continue;  // slots of the other layer's page
      EXPECT_EQ(offset_in_backing(view.select(0, id)),
                (id / 8) * row + layer * page + (id % 4) * (page / 4))
          << "layer " << layer << " kernel block " << id;
    }
  }
}

TEST(KVCacheViewsTest, SplitPaddedPagesNeverTouchThePadding) {
  // SEMANTICS §8.7: block 4, head 2, fp32 (16-byte states), real page 64, padded 96, ratio 2.
  KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  spec.page_size_padded = 96;
  const std::vector<int> kernel_sizes = {2};
  const KVCacheAllocation cache = allocate_kv_cache(
      one_group_config(spec, 3, 1, KVCacheLayout::LBHNC), Device::cpu(), kernel_sizes);
  const KernelBlockGeometry& geometry = cache.geometry.at("layer0");
  EXPECT_EQ(geometry.ratio, 2);
  EXPECT_EQ(geometry.slots_per_block, 3);
  const Tensor& view = cache.views.at("layer0");
  ASSERT_EQ(view.shape(), dims({8, 1, 2, 4}));
  for (std::int64_t block = 0; block < 3; ++block) {
    for (int j = 0; j < 2; ++j) {
      const Tensor kernel_block = view.select(0, geometry.kernel_block_id(block, j));
      for (std::int64_t n = 0; n < 2; ++n) {
        for (std::int64_t c = 0; c < 4; ++c) kernel_block.at<float>({0, n, c}) = 1.5f;
      }
    }
  }
  // Each 96-byte page: 16 floats of content written, then 32 bytes of padding still zero.
  const std::byte* bytes = cache.backing->data();
  for (std::int64_t block = 0; block < 3; ++block) {
    std::array<float, 16> content{};
    std::memcpy(content.data(), bytes + block * 96, 64);
    for (float value : content) EXPECT_EQ(value, 1.5f) << "page " << block;
    for (std::int64_t b = 64; b < 96; ++b) {
      EXPECT_EQ(bytes[block * 96 + b], std::byte{0}) << "page " << block << " byte " << b;
    }
  }
}

TEST(KVCacheViewsTest, ViewsRejectPagesThatCannotBeSplit) {
  KVCacheSpec padded = KVCacheSpec::full(4, 1, 2, DType::f32);
  padded.page_size_padded = 80;
  const std::vector<int> kernel_sizes = {2};
  const std::string message = error_of([&] {
    allocate_kv_cache(one_group_config(padded, 3, 1, KVCacheLayout::LBHNC), Device::cpu(),
                      kernel_sizes);
  });
  EXPECT_NE(message.find("kernel block"), std::string::npos) << message;
  const KVCacheSpec two_heads = KVCacheSpec::full(4, 2, 2, DType::f32);
  EXPECT_THROW(
      plan_kv_cache_views(one_group_config(two_heads, 3, 1, KVCacheLayout::LHBNC), kernel_sizes),
      Error);
  const std::vector<int> too_many = {2, 2};
  EXPECT_THROW(
      plan_kv_cache_views(one_group_config(two_heads, 3, 1, KVCacheLayout::LBHNC), too_many),
      Error);
}

// Marks in `owner` every byte of the layer's kernel blocks (b*slots_per_block + j; with spaced ids
// the other slots of a row are other layers' pages); false if a byte is claimed twice.
bool claim_bytes(const LayerViewGeometry& view, std::int64_t num_blocks, std::vector<int>& owner,
                 int layer) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(view.dtype));
  for (std::int64_t block = 0; block < num_blocks; ++block) {
    for (int j = 0; j < view.geometry.ratio; ++j) {
      const std::int64_t id = view.geometry.kernel_block_id(block, j);
      for (std::int64_t h = 0; h < view.shape[1]; ++h) {
        for (std::int64_t n = 0; n < view.shape[2]; ++n) {
          for (std::int64_t c = 0; c < view.shape[3]; ++c) {
            const std::int64_t first =
                view.byte_offset +
                element * (id * view.strides[0] + h * view.strides[1] + n * view.strides[2] + c);
            for (std::int64_t i = first; i < first + element; ++i) {
              if (owner.at(i) != -1) return false;
              owner[i] = layer;
            }
          }
        }
      }
    }
  }
  return true;
}

TEST(KVCacheViewsTest, LayerViewsNeverOverlapAndStayInside) {
  // 2 layers, 3 blocks of 4 tokens, head 2 fp32. One head, so that every layout can split.
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);  // page 64
  for (KVCacheLayout layout : kAllLayouts) {
    for (int kernel_size : {4, 2, 1}) {
      SCOPED_TRACE(fmt::format("{} kernel {}", layout_name(layout), kernel_size));
      const KVCacheConfig config = one_group_config(spec, 3, 2, layout);
      const std::vector<int> kernel_sizes = {kernel_size};
      const KVCacheAllocation cache = allocate_kv_cache(config, Device::cpu(), kernel_sizes);
      const std::vector<LayerViewGeometry> views = plan_kv_cache_views(config, kernel_sizes);
      std::vector<int> owner(config.backing_bytes(), -1);
      for (std::size_t l = 0; l < views.size(); ++l) {
        const Tensor& view = cache.views.at(views[l].layer);
        EXPECT_GE(view.first_byte(), 0);
        EXPECT_LE(view.end_byte(), static_cast<std::int64_t>(config.backing_bytes()));
        EXPECT_EQ(view.byte_offset(), views[l].byte_offset);
        EXPECT_TRUE(claim_bytes(views[l], config.num_blocks, owner, static_cast<int>(l)));
      }
      // Unpadded pages: every byte of the backing belongs to exactly one layer's kernel blocks.
      EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0);
    }
  }
}

TEST(KVCacheViewsTest, GroupsOverlayAndSharingLayersGetNoView) {
  // Two groups with equal pages overlay the backing; "late" is a KV-sharing layer appended to
  // group 0 after planning, so it gets no view of its own.
  const KVCacheSpec full = KVCacheSpec::full(16, 2, 8, DType::bf16);  // 32-byte states
  const KVCacheSpec sliding = KVCacheSpec::sliding(16, 2, 8, DType::bf16, 64);
  KVCacheConfig config;
  config.num_blocks = 5;
  config.kv_cache_layout = KVCacheLayout::LBNHC;
  config.layer_slots = 2;
  config.kv_cache_groups = {{{"f0", "f1", "late"}, full}, {{"s0"}, sliding}};
  config.kv_cache_tensors = {place_group(full, 5, 2, config.kv_cache_layout, {"f0", "f1"}),
                             place_group(sliding, 5, 2, config.kv_cache_layout, {"s0"})};
  const std::vector<LayerViewGeometry> views = plan_kv_cache_views(config);
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[2].layer, "s0");
  EXPECT_EQ(views[2].group_id, 1);
  EXPECT_EQ(views[2].byte_offset, views[0].byte_offset);
  EXPECT_EQ(views[1].byte_offset, 5 * 1024);
  EXPECT_EQ(views[0].dtype, DType::bf16);
  EXPECT_EQ(views[0].shape, (std::array<std::int64_t, 4>{5, 2, 16, 16}));
  EXPECT_EQ(views[0].strides, (std::array<std::int64_t, 4>{512, 16, 32, 1}));
  const KVCacheAllocation cache = allocate_kv_cache(config, Device::cpu());
  EXPECT_EQ(cache.views.size(), 3u);
  EXPECT_FALSE(cache.views.contains("late"));
  EXPECT_EQ(cache.views.at("s0").data(), cache.views.at("f0").data());
  EXPECT_EQ(cache.num_blocks, 5);
}

TEST(KVCacheViewsTest, EmptyConfigAllocatesNothing) {
  KVCacheConfig config;
  config.num_blocks = 1;
  const KVCacheAllocation cache = allocate_kv_cache(config, Device::cpu());
  EXPECT_EQ(cache.backing, nullptr);
  EXPECT_TRUE(cache.views.empty());
  EXPECT_TRUE(cache.geometry.empty());
}

}  // namespace
}  // namespace attnrt
