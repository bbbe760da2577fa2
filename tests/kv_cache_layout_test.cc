// KVCacheLayout names and properties, and the byte strides of compute_layout_strides
// (SEMANTICS §3.5, §8.7).

#include "attnrt/config/kv_cache_layout.h"

#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>

#include "attnrt/core/error.h"
#include "attnrt/kv/kv_cache_views.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

using Strides = std::array<std::int64_t, 5>;  // logical [L, B, H, N, C], bytes

TEST(KVCacheLayoutTest, NamesRoundTrip) {
  for (KVCacheLayout layout : kAllLayouts) {
    EXPECT_EQ(parse_kv_cache_layout(layout_name(layout)), layout);
  }
  EXPECT_EQ(layout_name(KVCacheLayout::BHLNC), "BHLNC");
  EXPECT_EQ(parse_kv_cache_layout("lbnhc"), KVCacheLayout::LBNHC);
}

TEST(KVCacheLayoutTest, UnknownNameListsTheValidOnes) {
  const std::string message = error_of([] { parse_kv_cache_layout("NHD"); });
  EXPECT_NE(message.find("'NHD'"), std::string::npos) << message;
  EXPECT_NE(message.find("LBHNC, LBNHC, LHBNC, BLHNC, BLNHC, BHLNC"), std::string::npos) << message;
}

struct LayoutProperties {
  KVCacheLayout layout;
  std::array<int, 5> stride_order;
  std::array<int, 4> layer_view_order;
  bool layer_compact;
  bool block_contiguous;
  bool block_compact;
  bool block_outermost;
};

TEST(KVCacheLayoutTest, PropertiesOfEveryLayout) {
  const LayoutProperties table[] = {
      {KVCacheLayout::LBHNC, {0, 1, 2, 3, 4}, {0, 1, 2, 3}, true, true, true, false},
      {KVCacheLayout::LBNHC, {0, 1, 3, 2, 4}, {0, 2, 1, 3}, true, false, true, false},
      {KVCacheLayout::LHBNC, {0, 2, 1, 3, 4}, {1, 0, 2, 3}, true, false, false, false},
      {KVCacheLayout::BLHNC, {1, 0, 2, 3, 4}, {0, 1, 2, 3}, false, true, true, true},
      {KVCacheLayout::BLNHC, {1, 0, 3, 2, 4}, {0, 2, 1, 3}, false, false, true, true},
      {KVCacheLayout::BHLNC, {1, 2, 0, 3, 4}, {0, 1, 2, 3}, false, false, false, true},
  };
  for (const LayoutProperties& row : table) {
    SCOPED_TRACE(layout_name(row.layout));
    EXPECT_EQ(stride_order(row.layout), row.stride_order);
    EXPECT_EQ(layer_view_order(row.layout), row.layer_view_order);
    EXPECT_EQ(is_layer_compact(row.layout), row.layer_compact);
    EXPECT_EQ(is_block_contiguous(row.layout), row.block_contiguous);
    EXPECT_EQ(is_block_compact(row.layout), row.block_compact);
    EXPECT_EQ(is_block_outermost(row.layout), row.block_outermost);
  }
}

TEST(LayoutStridesTest, NaturalStridesOfEveryLayout) {
  // 2 layers, 3 blocks of 4 tokens, 2 heads, head 2 fp32: C = (2+2)*4 = 16 bytes, N = 4 states,
  // page = 2*4*16 = 128 bytes.
  const KVCacheSpec spec = KVCacheSpec::full(4, 2, 2, DType::f32);
  const std::pair<KVCacheLayout, Strides> expected[] = {
      {KVCacheLayout::LBHNC, {384, 128, 64, 16, 1}}, {KVCacheLayout::LBNHC, {384, 128, 16, 32, 1}},
      {KVCacheLayout::LHBNC, {384, 64, 192, 16, 1}}, {KVCacheLayout::BLHNC, {128, 256, 64, 16, 1}},
      {KVCacheLayout::BLNHC, {128, 256, 16, 32, 1}}, {KVCacheLayout::BHLNC, {64, 256, 128, 16, 1}},
  };
  for (const auto& [layout, strides] : expected) {
    SCOPED_TRACE(layout_name(layout));
    EXPECT_EQ(compute_layout_strides(spec, 3, 2, layout), strides);
  }
}

TEST(LayoutStridesTest, PaddedPageRaisesTheBlockStride) {
  // SEMANTICS §8.7: block 16, 1 head, head 2, fp32, padded 384 → real page 256.
  KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  spec.page_size_padded = 384;
  const Strides strides = compute_layout_strides(spec, 3, 1, KVCacheLayout::LBHNC);
  EXPECT_EQ(strides[kv_axis::C], 1);
  EXPECT_EQ(strides[kv_axis::N], 16);
  EXPECT_EQ(strides[kv_axis::H], 256);
  EXPECT_EQ(strides[kv_axis::B], 384);
  EXPECT_EQ(strides[kv_axis::L], 3 * 384);
}

TEST(LayoutStridesTest, PaddedPageInBlockOutermostLayouts) {
  KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  spec.page_size_padded = 384;
  // BLHNC: the innermost L/B axis is L, so layers sit a padded page apart inside a block row.
  EXPECT_EQ(compute_layout_strides(spec, 3, 2, KVCacheLayout::BLHNC),
            (Strides{384, 768, 256, 16, 1}));
  // LHBNC with one head: the singleton H outside the page is allowed.
  EXPECT_EQ(compute_layout_strides(spec, 3, 2, KVCacheLayout::LHBNC),
            (Strides{1152, 384, 1152, 16, 1}));
}

TEST(LayoutStridesTest, PaddingRejectsHeadsOutsideThePage) {
  KVCacheSpec spec = KVCacheSpec::full(16, 2, 2, DType::f32);
  spec.page_size_padded = 1024;
  for (KVCacheLayout layout : {KVCacheLayout::LHBNC, KVCacheLayout::BHLNC}) {
    const std::string message = error_of([&] { compute_layout_strides(spec, 3, 2, layout); });
    EXPECT_NE(message.find("Page padding requires dimensions outside the page tail to be L, B, or "
                           "singleton"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(std::string(layout_name(layout)) + " puts H (2) outside the page"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(compute_layout_strides(spec, 3, 2, KVCacheLayout::LBNHC)[kv_axis::B], 1024);
}

TEST(LayoutStridesTest, PaddingWithKernelSplittingIsRejected) {
  KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  spec.page_size_padded = 384;
  EXPECT_THROW(compute_layout_strides(spec, 3, 1, KVCacheLayout::LBHNC, 8), Error);
  // A kernel block of the manager size is no split.
  EXPECT_EQ(compute_layout_strides(spec, 3, 1, KVCacheLayout::LBHNC, 16)[kv_axis::B], 384);
}

TEST(LayoutStridesTest, FixedBlockStridePropagatesOutward) {
  // SEMANTICS §8.7: LHBNC, 3 blocks, 2 layers, 2 heads, block stride S = natural + 8.
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 2, DType::f32);
  const std::int64_t natural = compute_layout_strides(spec, 3, 2, KVCacheLayout::LHBNC)[kv_axis::B];
  ASSERT_EQ(natural, 16 * 16);
  const std::int64_t s = natural + 8;
  const Strides strides =
      compute_layout_strides(spec, 3, 2, KVCacheLayout::LHBNC, std::nullopt,
                             {std::nullopt, s, std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(strides[kv_axis::B], s);
  EXPECT_EQ(strides[kv_axis::H], 3 * s);
  EXPECT_EQ(strides[kv_axis::L], 2 * strides[kv_axis::H]);
  EXPECT_EQ(strides[kv_axis::N], 16);
}

TEST(LayoutStridesTest, KernelBlocksCountBlocksAndStates) {
  // Block 16 split into kernel blocks of 4: 4x the blocks, 4 states each.
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  EXPECT_EQ(compute_layout_strides(spec, 3, 2, KVCacheLayout::LBHNC, 4),
            (Strides{12 * 64, 64, 64, 16, 1}));
  const std::string message =
      error_of([&] { compute_layout_strides(spec, 3, 2, KVCacheLayout::LBHNC, 5); });
  EXPECT_NE(message.find("kernel block size 5"), std::string::npos) << message;
}

TEST(LayoutStridesTest, CompressedStatesShrinkTheStateAxis) {
  // MLA, block 256, head 128 bf16 (256-byte latent), 4 tokens per state → 64 states per block.
  KVCacheSpec spec = KVCacheSpec::mla(256, 128, DType::bf16);
  spec.tokens_per_state = 4;
  EXPECT_EQ(compute_layout_strides(spec, 4, 1, KVCacheLayout::LBHNC),
            (Strides{4 * 64 * 256, 64 * 256, 64 * 256, 256, 1}));
  EXPECT_EQ(compute_layout_strides(spec, 4, 1, KVCacheLayout::LBHNC, 64),
            (Strides{16 * 16 * 256, 16 * 256, 16 * 256, 256, 1}));
}

}  // namespace
}  // namespace attnrt
