// BlockTables (SEMANTICS §3.3, §2.8, §8.6): appends in kernel-block units, row capacity, the
// batch gather and slot mappings, and the translation of slot mappings for spaced kernel ids
// (§0). The context-parallel cases of §8.6 are out of scope (SEMANTICS §0: no DCP/PCP).

#include "attnrt/runner/block_tables.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/kv/kv_cache_views.h"
#include "error_of.h"
#include "step_test_model.h"

namespace attnrt {
namespace {

using testing::error_of;

using Ids = std::vector<std::int32_t>;
using Slots = std::vector<std::int64_t>;

// append_block_ids with one vector per group.
void append(BlockTables& tables, int req, const std::vector<Ids>& ids, bool overwrite) {
  std::vector<std::span<const std::int32_t>> spans(ids.begin(), ids.end());
  tables.append_block_ids(req, spans, overwrite);
}

Ids row(const BlockTables& tables, int group, int req) {
  const auto r = tables.row(group, req);
  return Ids(r.begin(), r.end());
}

Ids batch_row(const BlockTables& tables, int group, int i) {
  const auto r = tables.block_table(group).row(i);
  return Ids(r.begin(), r.end());
}

Slots slots(const BlockTables& tables, int group) {
  const auto s = tables.slot_mapping(group);
  return Slots(s.begin(), s.end());
}

BlockTableGroup dense_group(int manager_block_size, int kernel_block_size, int max_blocks) {
  const int ratio = manager_block_size / kernel_block_size;
  return {KernelBlockGeometry{manager_block_size, kernel_block_size, ratio, ratio}, max_blocks};
}

// SEMANTICS §8.6: block sizes [16, 32, 8], kernel sizes [16, 16, 8] (ratios 1, 2, 1).
BlockTables three_groups() {
  return BlockTables({dense_group(16, 16, 8), dense_group(32, 16, 8), dense_group(8, 8, 8)}, 4, 16,
                     32);
}

TEST(BlockTablesTest, AppendExpandsManagerIdsPerGroupGeometry) {
  BlockTables tables = three_groups();
  append(tables, 0, {{1, 2}, {10, 11}, {}}, true);
  append(tables, 1, {{3}, {12}, {5, 6}}, true);
  EXPECT_EQ(row(tables, 0, 0), (Ids{1, 2}));
  EXPECT_EQ(row(tables, 1, 0), (Ids{20, 21, 22, 23}));
  EXPECT_EQ(row(tables, 0, 1), (Ids{3}));
  EXPECT_EQ(row(tables, 1, 1), (Ids{24, 25}));
  EXPECT_EQ(row(tables, 2, 1), (Ids{5, 6}));
  const int counts[3][2] = {{2, 1}, {4, 2}, {0, 2}};
  for (int g = 0; g < 3; ++g) {
    for (int r = 0; r < 2; ++r) EXPECT_EQ(tables.num_blocks(g, r), counts[g][r]) << g << r;
  }

  append(tables, 0, {{7}, {13}, {8}}, false);
  EXPECT_EQ(row(tables, 0, 0), (Ids{1, 2, 7}));
  EXPECT_EQ(row(tables, 1, 0), (Ids{20, 21, 22, 23, 26, 27}));
  EXPECT_EQ(row(tables, 2, 0), (Ids{8}));
  EXPECT_EQ(tables.num_blocks(0, 0), 3);
  EXPECT_EQ(tables.num_blocks(1, 0), 6);
  EXPECT_EQ(tables.num_blocks(2, 0), 1);
  EXPECT_EQ(tables.row_capacity(1), 16);  // 8 manager blocks of 2 kernel blocks
}

TEST(BlockTablesTest, OversizedAppendRaisesBeforeStagingAnything) {
  // Group 0 rows hold 4 blocks; group 1 would fit, but nothing may be written.
  BlockTables tables({dense_group(16, 16, 4), dense_group(16, 16, 8)}, 2, 16, 32);
  append(tables, 1, {{0, 1, 2}, {9}}, true);
  const std::string message = error_of([&] { append(tables, 1, {{3, 4}, {10}}, false); });
  EXPECT_EQ(message.find("request 1, group 0 exceeds row capacity (5 > 4); "), 0u) << message;
  EXPECT_EQ(row(tables, 0, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(row(tables, 1, 1), (Ids{9}));
}

TEST(BlockTablesTest, BadSlotsIdsAndGroupCountsAreRejectedUnstaged) {
  BlockTables tables({dense_group(16, 16, 4)}, 2, 16, 32);
  EXPECT_NE(error_of([&] { append(tables, 2, {{1}}, true); }).find("request slot 2"),
            std::string::npos);
  const std::string bad_id = error_of([&] { append(tables, 0, {{31, 32}}, true); });
  EXPECT_NE(bad_id.find("block id 32, outside the KV cache's 32 blocks"), std::string::npos)
      << bad_id;
  EXPECT_NE(error_of([&] {
              append(tables, 0, {{1}, {2}}, true);
            }).find("2 KV cache groups"),
            std::string::npos);
  EXPECT_EQ(tables.num_blocks(0, 0), 0);
}

TEST(BlockTablesTest, RowWidthPastIntIsRefusedBeforeAllocating) {
  // 2^26 manager blocks per request × 65536 kernel blocks each = 2^42 columns.
  const std::string message =
      error_of([] { BlockTables({dense_group(65536, 1, 1 << 26)}, 1, 16, 32); });
  EXPECT_NE(message.find("block table width of group 0"), std::string::npos) << message;
}

TEST(BlockTablesTest, InconsistentGeometryIsRefusedNotDividedByZero) {
  const KernelBlockGeometry zero_kernel{16, 0, 1, 1};
  EXPECT_NE(error_of([&] {
              BlockTables({{zero_kernel, 4}}, 4, 16, 32);
            }).find("BlockTables: group 0 has manager blocks of 16 tokens, kernel blocks of 0"),
            std::string::npos);
  const KernelBlockGeometry few_slots{16, 8, 2, 1};
  EXPECT_NE(error_of([&] {
              BlockTables({{few_slots, 4}}, 4, 16, 32);
            }).find("slots"),
            std::string::npos);
}

TEST(BlockTablesTest, KernelIdsPastInt32AreRefusedWithoutWrapping) {
  // Spaced by 2^40: the last id of 3 blocks is 2^41 + 1, and an id of 2^62 blocks passes 64 bits.
  const KernelBlockGeometry spaced{16, 8, 2, std::int64_t{1} << 40};
  EXPECT_NE(error_of([&] {
              BlockTables({{spaced, 4}}, 4, 16, 3);
            }).find("do not fit int32"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              BlockTables({{spaced, 4}}, 4, 16, std::int64_t{1} << 30);
            }).find("does not fit in 64 bits"),
            std::string::npos);
}

TEST(BlockTablesTest, RemovedRowsAreReusedFromColumnZero) {
  BlockTables tables({dense_group(16, 16, 4)}, 2, 16, 32);
  append(tables, 0, {{5, 6, 7}}, true);
  tables.remove_request(0);
  EXPECT_EQ(tables.num_blocks(0, 0), 0);
  append(tables, 0, {{9}}, false);
  EXPECT_EQ(row(tables, 0, 0), (Ids{9}));
}

TEST(BlockTablesTest, GatherFollowsTheBatchOrderAndZeroesPaddedRows) {
  BlockTables tables({dense_group(16, 16, 3)}, 4, 16, 32);
  append(tables, 0, {{4, 5}}, true);
  append(tables, 2, {{6}}, true);
  append(tables, 3, {{7, 8, 9}}, true);
  const Ids first = {3, 0};
  tables.gather_block_tables(first, 3);
  EXPECT_EQ(batch_row(tables, 0, 0), (Ids{7, 8, 9}));
  EXPECT_EQ(batch_row(tables, 0, 2), (Ids{0, 0, 0}));
  const Ids second = {2, 0};  // row 0 was 3 blocks long; only the request's own are copied
  tables.gather_block_tables(second, 4);
  EXPECT_EQ(tables.block_table(0).num_rows, 4);
  EXPECT_EQ(batch_row(tables, 0, 0)[0], 6);
  EXPECT_EQ(batch_row(tables, 0, 1), (Ids{4, 5, 0}));
  EXPECT_EQ(batch_row(tables, 0, 2), (Ids{0, 0, 0}));
  EXPECT_EQ(batch_row(tables, 0, 3), (Ids{0, 0, 0}));
  EXPECT_NE(error_of([&] { tables.gather_block_tables(second, 5); }).find("4 rows"),
            std::string::npos);
}

TEST(BlockTablesTest, IncrementalGatherMatchesAFreshCopyThroughAppendsAndRewrites) {
  // Rows are re-gathered only from the first block appended since the last step; overwrites,
  // removals, reordering and padding must still give each batch row exactly its request's ids.
  BlockTables tables({dense_group(32, 16, 6), dense_group(16, 16, 12)}, 4, 16, 64);
  unsigned state = 12345;
  auto next = [&](unsigned bound) {
    state = state * 1103515245u + 12345u;
    return static_cast<int>((state >> 16) % bound);
  };
  for (int step = 0; step < 1000; ++step) {
    const int req = next(4);
    const int action = next(5);
    if (action == 0 || tables.num_blocks(0, req) >= 6) {
      tables.remove_request(req);
    } else {
      const Ids id0 = {next(64)};
      const Ids id1 = {next(64), next(64)};
      append(tables, req, {id0, id1}, action == 1);
    }
    // A random order of 1..4 distinct slots, padded to up to 4 rows.
    Ids order = {0, 1, 2, 3};
    for (int i = 3; i > 0; --i) std::swap(order[i], order[next(i + 1)]);
    order.resize(1 + next(4));
    const int padded = static_cast<int>(order.size()) + next(5 - static_cast<int>(order.size()));
    tables.gather_block_tables(order, padded);
    for (int g = 0; g < 2; ++g) {
      for (int i = 0; i < padded; ++i) {
        const Ids got = batch_row(tables, g, i);
        if (i < static_cast<int>(order.size())) {
          const Ids want = row(tables, g, order[i]);
          ASSERT_EQ(Ids(got.begin(), got.begin() + want.size()), want) << step << " " << g << i;
        } else {
          ASSERT_EQ(got, Ids(got.size(), 0)) << "padded row " << i << " at step " << step;
        }
      }
    }
  }
}

TEST(BlockTablesTest, SlotMappingPadsMarkedTokensAndTheTail) {
  // SEMANTICS §8.6: block 16, req0 block [2], req1 block [3], qsl [0, 3, 5].
  BlockTables tables({dense_group(16, 16, 4)}, 2, 12, 32);
  append(tables, 0, {{2}}, true);
  append(tables, 1, {{3}}, true);
  const Ids idx = {0, 1};
  const std::vector<std::int32_t> qsl = {0, 3, 5};
  const Slots positions = {0, 1, 2, 0, 1, 0, 0, 0};
  const std::vector<std::uint8_t> is_padding = {0, 1, 0, 0, 1, 0, 0, 0};
  tables.compute_slot_mappings(idx, qsl, positions, 8, is_padding);
  EXPECT_EQ(slots(tables, 0), (Slots{32, -1, 34, 48, -1, -1, -1, -1}));
  for (std::size_t t = 8; t < 12; ++t) EXPECT_EQ(tables.slot_mapping_buffer(0)[t], PAD_SLOT_ID);
}

TEST(BlockTablesTest, StaleSlotsOfALargerStepNeverSurvive) {
  BlockTables tables({dense_group(4, 4, 4)}, 1, 12, 32);
  append(tables, 0, {{1, 2, 3}}, true);
  const Ids idx = {0};
  const Slots positions = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  tables.compute_slot_mappings(idx, std::vector<std::int32_t>{0, 10}, positions, 10);
  EXPECT_EQ(tables.slot_mapping(0)[9], 3 * 4 + 1);
  tables.compute_slot_mappings(idx, std::vector<std::int32_t>{0, 2}, Slots{8, 9}, 4);
  const auto buffer = tables.slot_mapping_buffer(0);
  EXPECT_EQ((Slots(buffer.begin(), buffer.end())),
            (Slots{12, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
}

// Found by fuzz_step_inputs: offsets that fall back read and wrote outside the step's tokens.
TEST(BlockTablesTest, DescendingQueryStartLocIsAnErrorThatWritesNothing) {
  BlockTables tables({dense_group(16, 16, 4)}, 2, 8, 32);
  append(tables, 0, {{2}}, true);
  append(tables, 1, {{3}}, true);
  tables.compute_slot_mappings(Ids{0, 1}, std::vector<std::int32_t>{0, 1, 2}, Slots{0, 0}, 2);
  const std::string message = error_of([&] {
    tables.compute_slot_mappings(Ids{0, 1}, std::vector<std::int32_t>{0, 3, 2}, Slots{0, 1, 2}, 3);
  });
  EXPECT_NE(message.find("query_start_loc[2] = 2 is below query_start_loc[1] = 3"),
            std::string::npos)
      << message;
  EXPECT_EQ(slots(tables, 0), (Slots{32, 48}));  // the previous step's mapping, untouched
}

TEST(BlockTablesTest, PositionsPastTheRequestsBlocksAreAnError) {
  BlockTables tables({dense_group(16, 16, 4)}, 1, 8, 32);
  append(tables, 0, {{2}}, true);
  const std::string message = error_of([&] {
    tables.compute_slot_mappings(Ids{0}, std::vector<std::int32_t>{0, 1}, Slots{16}, 1);
  });
  EXPECT_NE(message.find("position 16, past its 1 kernel blocks"), std::string::npos) << message;
}

// An attention group holding only the geometry and the translation flag.
std::vector<std::vector<AttentionGroup>> groups_with(const KernelBlockGeometry& geometry,
                                                     bool translated) {
  std::vector<std::vector<AttentionGroup>> groups(1);
  groups[0].emplace_back(nullptr, std::vector<std::string>{"layer0", "layer1"},
                         KVCacheSpec::full(geometry.manager_block_size, 1, 2, DType::f32), 0);
  groups[0][0].kernel_geometry = geometry;
  groups[0][0].slot_mappings_translated = translated;
  return groups;
}

TEST(BlockTablesTest, SpacedIdsForBlhncTranslateToKernelSlots) {
  // SEMANTICS §8.6: BLHNC, 3 blocks, 2 layers, ratio 4 → 8 kernel-block strides per manager block.
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 2, DType::f32);
  const auto strides = compute_layout_strides(spec, 3, 2, KVCacheLayout::BLHNC);
  const KVCacheTensor tensor{static_cast<std::uint64_t>(2 * spec.page_size_bytes() * 3),
                             {"layer0", "layer1"},
                             strides[kv_axis::L],
                             strides[kv_axis::B],
                             0};
  const KernelBlockGeometry geometry =
      get_kernel_block_geometry(spec, tensor, KVCacheLayout::BLHNC, 4);
  ASSERT_EQ(geometry, (KernelBlockGeometry{16, 4, 4, 8}));

  BlockTables tables({{geometry, 2}}, 1, 8, 3);
  append(tables, 0, {{2, 0}}, true);
  EXPECT_EQ(row(tables, 0, 0), (Ids{16, 17, 18, 19, 0, 1, 2, 3}));
  // Positions 5, 21, 30: manager slots 2*16+5, 0*16+5, 0*16+14.
  tables.compute_slot_mappings(Ids{0}, std::vector<std::int32_t>{0, 3}, Slots{5, 21, 30}, 4);
  EXPECT_EQ(slots(tables, 0), (Slots{37, 5, 14, -1}));
  tables.translate_slot_mappings(groups_with(geometry, true));
  // Kernel block 2*8 + 5/4 = 17 offset 1; kernel 1 offset 1; kernel 3 offset 2.
  EXPECT_EQ(slots(tables, 0), (Slots{17 * 4 + 1, 1 * 4 + 1, 3 * 4 + 2, -1}));
}

TEST(BlockTablesTest, SpacedIdsForPaddedPagesTranslateToKernelSlots) {
  // SEMANTICS §8.7: block 4, head 2, fp32, real page 64, padded 96, ratio 2 → 3 strides per block.
  KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  spec.page_size_padded = 96;
  const auto strides = compute_layout_strides(spec, 3, 1, KVCacheLayout::LBHNC);
  const KVCacheTensor tensor{96 * 3, {"layer0"}, strides[kv_axis::L], strides[kv_axis::B], 0};
  const KernelBlockGeometry geometry =
      get_kernel_block_geometry(spec, tensor, KVCacheLayout::LBHNC, 2);
  ASSERT_EQ(geometry, (KernelBlockGeometry{4, 2, 2, 3}));

  BlockTables tables({{geometry, 2}}, 1, 8, 3);
  append(tables, 0, {{1, 0}}, true);
  EXPECT_EQ(row(tables, 0, 0), (Ids{3, 4, 0, 1}));
  tables.compute_slot_mappings(Ids{0}, std::vector<std::int32_t>{0, 4}, Slots{0, 3, 5, 6}, 4);
  EXPECT_EQ(slots(tables, 0), (Slots{4, 7, 1, 2}));
  // The same translation AttentionGroup::map_to_kernel_slot_mapping gives.
  auto attention = groups_with(geometry, true);
  tables.translate_slot_mappings(attention);
  EXPECT_EQ(slots(tables, 0), (Slots{3 * 2 + 0, 4 * 2 + 1, 0 * 2 + 1, 1 * 2 + 0}));
  Slots manager = {4, 7, 1, 2};
  attention[0][0].map_to_kernel_slot_mapping(manager);
  EXPECT_EQ(manager, slots(tables, 0));
}

TEST(BlockTablesTest, UntranslatedGroupThatNeedsTranslationIsAnError) {
  const KernelBlockGeometry spaced{16, 4, 4, 8};
  BlockTables tables({{spaced, 2}}, 1, 8, 3);
  append(tables, 0, {{1}}, true);
  tables.compute_slot_mappings(Ids{0}, std::vector<std::int32_t>{0, 1}, Slots{5}, 1);
  const std::string message =
      error_of([&] { tables.translate_slot_mappings(groups_with(spaced, false)); });
  EXPECT_NE(message.find("KV cache group 0"), std::string::npos) << message;
  EXPECT_NE(message.find("maps_slot_mapping"), std::string::npos) << message;
  EXPECT_EQ(slots(tables, 0), (Slots{21}));  // left as manager slots
  // Tables built for another geometry than the attention groups' are refused too.
  const std::string mismatch = error_of([&] {
    tables.translate_slot_mappings(groups_with(KernelBlockGeometry{16, 8, 2, 4}, true));
  });
  EXPECT_NE(mismatch.find("layers layer0, layer1"), std::string::npos) << mismatch;
}

TEST(BlockTablesTest, DenseGroupsNeedNoTranslation) {
  const KernelBlockGeometry dense{32, 16, 2, 2};
  BlockTables tables({{dense, 2}}, 1, 8, 4);
  append(tables, 0, {{3}}, true);
  tables.compute_slot_mappings(Ids{0}, std::vector<std::int32_t>{0, 2}, Slots{1, 20}, 2);
  tables.translate_slot_mappings(groups_with(dense, false));
  EXPECT_EQ(slots(tables, 0), (Slots{97, 116}));  // the manager slots are the kernel slots
}

// A copy's views point into its own buffers: the original's next step changes nothing in it.
TEST(BlockTablesTest, CopiesKeepTheirOwnTablesAndViews) {
  BlockTables original({dense_group(16, 16, 3)}, 2, 8, 32);
  append(original, 0, {{4, 5}}, true);
  original.gather_block_tables(Ids{0}, 1);
  original.compute_slot_mappings(Ids{0}, std::vector<std::int32_t>{0, 2}, Slots{0, 17}, 2);
  BlockTables copy = original;
  EXPECT_NE(copy.block_table(0).data, original.block_table(0).data);
  EXPECT_NE(copy.slot_mapping(0).data(), original.slot_mapping(0).data());
  EXPECT_EQ(copy.slot_mapping(0).data(), copy.slot_mapping_buffer(0).data());

  append(original, 1, {{9}}, true);
  original.gather_block_tables(Ids{1}, 1);
  original.compute_slot_mappings(Ids{1}, std::vector<std::int32_t>{0, 1}, Slots{3}, 1);
  EXPECT_EQ(batch_row(copy, 0, 0), (Ids{4, 5, 0}));
  EXPECT_EQ(slots(copy, 0), (Slots{64, 81}));
  EXPECT_EQ(slots(original, 0), (Slots{147}));

  BlockTables assigned({dense_group(16, 16, 1)}, 1, 1, 2);
  assigned = copy;
  EXPECT_EQ(assigned.num_groups(), 1);
  EXPECT_EQ(assigned.row_capacity(0), 3);
  EXPECT_EQ(batch_row(assigned, 0, 0), (Ids{4, 5, 0}));
  EXPECT_EQ(assigned.slot_mapping(0).data(), assigned.slot_mapping_buffer(0).data());
  const BlockTables moved = std::move(assigned);
  EXPECT_EQ(slots(moved, 0), (Slots{64, 81}));
}

}  // namespace
}  // namespace attnrt
