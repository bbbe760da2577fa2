// CPU_REFERENCE under FULL-graph emulation (SEMANTICS §0): the builder's one reused metadata
// object, write_kv's PAD_SLOT_ID skipping and slot checks, replays of a graph captured at padded
// sizes with refreshed arrays, and batch invariance; batches from paged_attention_batch.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "full_graph_replay.h"
#include "paged_attention_batch.h"

namespace attnrt {
namespace {

using testing::allocate_layers;
using testing::attention_shape;
using testing::error_of;
using testing::FullGraphReplay;
using testing::mixed_batch_options;
using testing::PagedBatch;
using testing::PagedBatchOptions;
using testing::round_to;
using testing::rows_of;

TEST(CpuReferenceBackendTest, BuildKeepsTheCommonMetadataInOneBuilderOwnedObject) {
  const EngineConfig config;
  const auto builder = CpuReferenceBackend().create_builder(KVCacheSpec::full(16, 1, 8, DType::f32),
                                                            {"layer0"}, config, Device::cpu());
  const std::vector<std::int32_t> qsl = {0, 3, 4}, seq_lens = {3, 9};
  CommonAttentionMetadata two;
  two.query_start_loc = qsl;
  two.seq_lens = seq_lens;
  two.num_reqs = 2;
  const AttentionMetadata& first = builder->build(0, two);
  EXPECT_EQ(first.common.query_start_loc.data(), qsl.data());  // a view, not a copy
  EXPECT_EQ(first.common.num_reqs, 2);
  const std::unique_ptr<AttentionMetadata> captured =
      builder->build_for_cudagraph_capture(two).clone();

  CommonAttentionMetadata one = two;
  one.num_reqs = 1;
  const AttentionMetadata& second = builder->build(0, one);
  EXPECT_EQ(&second, &first);  // the same object every step: nothing allocated
  EXPECT_EQ(second.common.num_reqs, 1);
  EXPECT_EQ(captured->common.num_reqs, 2);  // a capture's clone keeps its frozen scalars
}

// Address bytes [first, first + size) of entry (block, head, state, content) of `view`.
std::pair<std::int64_t, std::int64_t> entry_bytes(const Tensor& view, std::int64_t block,
                                                  std::int64_t head, std::int64_t state,
                                                  std::int64_t content) {
  const auto size = static_cast<std::int64_t>(dtype_size(view.dtype()));
  const std::int64_t element = block * view.stride(0) + head * view.stride(1) +
                               state * view.stride(2) + content * view.stride(3);
  return {view.data() - view.buffer()->data() + element * size, size};
}

TEST(CpuReferenceBackendTest, WriteKvSkipsPadSlotsAndRoundsToTheCacheDtype) {
  // f16, K width 4 and V width 3, 2 layers in BLNHC: strided heads, states and blocks.
  const KVCacheSpec spec = KVCacheSpec::full(4, 2, 4, DType::f16, 3);
  const KVCacheAllocation allocation = allocate_layers(spec, KVCacheLayout::BLNHC, 2, 3, 4);
  const Tensor& view = allocation.views.at("layer1");
  std::byte* backing = allocation.backing->data();
  std::fill_n(backing, allocation.backing->size(), std::byte{0x5A});

  std::mt19937 rng(90);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> keys(4 * 2 * 4), values(4 * 2 * 3);
  for (float& x : keys) x = uniform(rng);
  for (float& x : values) x = uniform(rng);
  const AttentionShape shape = attention_shape(AttentionType::full, 2, 2, 4, 3);
  const std::vector<std::int64_t> slots = {PAD_SLOT_ID, 6, PAD_SLOT_ID, 9};
  CpuReferenceBackend().write_kv(
      {shape, rows_of(keys, 4, 2, 4), rows_of(values, 4, 2, 3), slots, view});

  std::vector<bool> written(allocation.backing->size(), false);
  for (int t : {1, 3}) {
    const std::int64_t block = slots[t] / 4, offset = slots[t] % 4;  // slot 6: (1, 2); 9: (2, 1)
    for (int h = 0; h < 2; ++h) {
      for (int c = 0; c < 7; ++c) {
        const float expected = c < 4 ? keys[(t * 2 + h) * 4 + c] : values[(t * 2 + h) * 3 + c - 4];
        EXPECT_EQ(view.get({block, h, offset, c}), round_to(DType::f16, expected));
        const auto [first, size] = entry_bytes(view, block, h, offset, c);
        std::fill_n(written.begin() + first, size, true);
      }
    }
  }
  int untouched_changed = 0;
  for (std::size_t i = 0; i < written.size(); ++i) {
    if (!written[i] && backing[i] != std::byte{0x5A}) ++untouched_changed;
  }
  EXPECT_EQ(std::count(written.begin(), written.end(), true), 2 * 2 * 7 * 2);
  EXPECT_EQ(untouched_changed, 0);  // padding tokens and layer 0 untouched
}

TEST(CpuReferenceBackendTest, WriteKvRejectsBadSlotsBeforeWriting) {
  const KVCacheSpec spec = KVCacheSpec::full(4, 1, 2, DType::f32);
  const KVCacheAllocation allocation = allocate_layers(spec, KVCacheLayout::LBNHC, 1, 3, 4);
  const AttentionShape shape = attention_shape(AttentionType::full, 1, 1, 2, 2);
  std::vector<float> keys(6, 1.f), values(6, 1.f);
  for (std::int64_t bad : {std::int64_t{12}, std::int64_t{-5}}) {
    const std::vector<std::int64_t> slots = {0, 5, bad};
    const std::string error = error_of([&] {
      CpuReferenceBackend().write_kv({shape, rows_of(keys, 3, 1, 2), rows_of(values, 3, 1, 2),
                                      slots, allocation.views.at("layer0")});
    });
    EXPECT_NE(error.find("token 2 has slot " + std::to_string(bad)), std::string::npos) << error;
    EXPECT_NE(error.find("12 slots"), std::string::npos) << error;
  }
  const std::byte* backing = allocation.backing->data();
  EXPECT_TRUE(std::all_of(backing, backing + allocation.backing->size(),
                          [](std::byte b) { return b == std::byte{0}; }));  // tokens 0, 1 too
}

TEST(CpuReferenceBackendTest, FullGraphReplayWithPaddedMetadataMatchesEager) {
  PagedBatchOptions big = mixed_batch_options(8, 2);
  big.shape.type = AttentionType::sliding_window;
  big.shape.sliding_window = 20;
  big.block_table_cols = 8;
  PagedBatchOptions small = big;
  small.requests = {{3, 2}, {50, 1}};
  const AttentionBackendPtr backend = make_cpu_reference_backend();
  PagedBatch eager_big(backend, big, 100), eager_small(backend, small, 101);
  // The same data over untouched caches, for the graph.
  PagedBatch graph_big(backend, big, 100), graph_small(backend, small, 101);
  FullGraphReplay graph(graph_big.builder(), eager_big.num_reqs() + 3, eager_big.num_tokens() + 5,
                        8);

  for (auto [eager, replayed] : {std::pair{&eager_big, &graph_big}, {&eager_small, &graph_small}}) {
    const std::vector<float> expected = eager->run_eager();
    const std::vector<float> output = graph.replay(*replayed);
    ASSERT_GE(output.size(), expected.size());
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), output.begin()));  // bitwise
    EXPECT_TRUE(std::all_of(output.begin() + expected.size(), output.end(),
                            [](float x) { return x == 0.f; }));  // padded rows zeroed
  }
}

TEST(CpuReferenceBackendTest, ARequestsResultDoesNotDependOnItsBatch) {
  PagedBatch batch(make_cpu_reference_backend(), mixed_batch_options(8, 2), 110);
  const std::vector<float> together = batch.run_eager();
  const AttentionShape& s = batch.shape();
  const std::size_t in_row = static_cast<std::size_t>(s.num_heads) * s.head_size;
  const std::size_t out_row = static_cast<std::size_t>(s.num_heads) * s.head_size_v;
  for (int r = 0; r < batch.num_reqs(); ++r) {
    const int start = batch.query_start_loc[r], len = batch.query_start_loc[r + 1] - start;
    const std::vector<std::int32_t> qsl = {0, len}, seq_lens = {batch.seq_lens[r]};
    AttentionMetadata alone;
    alone.common.query_start_loc = qsl;
    alone.common.seq_lens = seq_lens;
    alone.common.num_reqs = 1;
    alone.common.num_actual_tokens = len;
    alone.common.block_table = {batch.block_table.data() + r * batch.block_table_cols(), 1,
                                batch.block_table_cols(), batch.block_table_cols()};
    std::vector<float> query(batch.query.begin() + start * in_row,
                             batch.query.begin() + (start + len) * in_row);
    const std::vector<float> output = batch.forward(alone, query, len);
    EXPECT_TRUE(std::equal(output.begin(), output.end(), together.begin() + start * out_row))
        << "request " << r;
  }
}

}  // namespace
}  // namespace attnrt
