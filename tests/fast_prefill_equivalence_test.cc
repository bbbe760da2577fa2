// KV-sharing fast prefill end to end (SEMANTICS §6): a trailing KV-sharing layer run through
// build_attn_metadata on the FastPrefillHelper's logits rows gives, for those rows, exactly the
// outputs it gives on the full batch — same CPU reference kernels, same cache. The step mixes a
// chunked prefill, a decode, a spec-decode verification and a whole prompt, padded to
// PIECEWISE graphs.

#include <gtest/gtest.h>

#include <vector>

#include "attnrt/backends/fast_prefill_backend.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "step_test_model.h"

namespace attnrt {
namespace {

using I32 = std::vector<std::int32_t>;

struct FastPrefillRunner {
  // layer0 and layer1 own caches; layer2 reads layer1's and takes the fast-prefill path.
  FastPrefillRunner() : model(config(), make_cpu_reference_backend(), false), manager(options()) {
    manager.mark_captured();
  }

  static EngineConfig config() {
    EngineConfig c = step_testing::small_config(3, 1, 16, "LBNHC");
    c.cache.kv_sharing_fast_prefill = true;
    return c;
  }
  static CudaGraphManagerOptions options() {
    CudaGraphManagerOptions o;
    o.mode = CUDAGraphMode::PIECEWISE;
    o.capture_sizes = {4, 8, 16, 32};
    o.max_num_reqs = 8;
    return o;
  }

  // Runs one step: dispatch, pad, slots, K/V of the owning layers, metadata. Returns the row keys
  // (slot * 1000 + position) of the real tokens.
  std::vector<int> step(const std::vector<ScheduledRequest>& requests) {
    batch.prepare(requests);
    descriptor = manager.dispatch(batch.num_reqs(), batch.num_tokens(),
                                  batch.uniform_decode_token_count(), 0, batch.max_query_len());
    batch.pad_to(descriptor);
    tables.gather_block_tables(batch.idx_mapping(), batch.num_reqs_padded());
    tables.compute_slot_mappings(batch.idx_mapping(), batch.query_start_loc(), batch.positions(),
                                 batch.num_tokens_padded(), batch.is_padding());
    tables.translate_slot_mappings(model.attn.attn_groups);
    fast = helper.prepare(batch.logits_indices(), batch.num_reqs(), batch.cu_num_logits(),
                          batch.has_prefill(), descriptor);
    AttentionMetadataInputs inputs = make_attention_metadata_inputs(batch, tables);
    inputs.fast_prefill = fast ? &*fast : nullptr;
    build_attn_metadata(model.attn.attn_groups, inputs, metadata);
    std::vector<int> keys;
    for (int i = 0; i < batch.num_reqs(); ++i) {
      for (int t = batch.query_start_loc()[i]; t < batch.query_start_loc()[i + 1]; ++t) {
        keys.push_back(batch.idx_mapping()[i] * 1000 + static_cast<int>(batch.positions()[t]));
      }
    }
    for (const char* owner : {"layer0", "layer1"}) {
      step_testing::write_kv(model.layer(owner), keys, tables.slot_mapping(0));
    }
    return keys;
  }

  void add_blocks(int req, I32 ids) {
    const std::span<const std::int32_t> groups[] = {ids};
    tables.append_block_ids(req, groups, false);
  }

  step_testing::StepModel model;
  CudaGraphManager manager;
  BlockTables tables =
      BlockTables::from_config(model.config, model.plan.kv_cache_config, model.attn.attn_groups);
  InputBatch batch{8, 64};
  FastPrefillHelper helper{64, manager};
  AttentionMetadataByLayer metadata{model.attn.attn_groups};
  BatchExecutionDescriptor descriptor;
  std::optional<FastPrefillBatchMetadata> fast;
};

TEST(FastPrefillEquivalenceTest, LogitsRowsMatchTheFullBatchExactly) {
  FastPrefillRunner runner;
  ASSERT_EQ(runner.model.attn.attn_groups[0].size(), 2u);
  ASSERT_TRUE(is_fast_prefill_backend(*runner.model.attn.attn_groups[0][1].backend));
  ASSERT_EQ(runner.model.attn.attn_groups[0][1].layer_names, (std::vector<std::string>{"layer2"}));

  runner.add_blocks(0, {4, 9});  // a 30-token prompt
  runner.add_blocks(1, {2});
  runner.add_blocks(2, {7});
  runner.add_blocks(3, {5});
  // History: the first prompt chunks.
  runner.step({{0, 0, 10, 30, 0}, {1, 0, 6, 6, 0}, {2, 0, 5, 5, 0}});
  // The step under test: A's next chunk (still prefilling), B's decode, C verifying 2 drafts, a
  // whole 7-token prompt for D. 23 tokens run under the 32-token PIECEWISE graph.
  const std::vector<int> keys =
      runner.step({{0, 10, 12, 30, 0}, {1, 6, 1, 6, 0}, {2, 5, 3, 5, 2}, {3, 0, 7, 7, 0}});
  EXPECT_EQ(runner.descriptor.num_tokens, 32);
  ASSERT_TRUE(runner.fast.has_value());
  const FastPrefillBatchMetadata& fast = *runner.fast;
  EXPECT_EQ(fast.num_logits_indices, 6);
  EXPECT_EQ(fast.max_logits_per_req, 3);
  EXPECT_EQ(I32(fast.logits_indices_padded.begin(), fast.logits_indices_padded.end()),
            (I32{11, 12, 13, 14, 15, 22, 22, 22}));  // padded to the 8-token graph

  // The wrapped builder saw the logits rows as the queries (SEMANTICS §6.2).
  const CommonAttentionMetadata& reduced = runner.metadata.at("layer2").common;
  EXPECT_EQ(I32(reduced.query_start_loc.begin(), reduced.query_start_loc.end()),
            (I32{0, 1, 2, 5, 6}));
  EXPECT_EQ(reduced.num_actual_tokens, 6);
  EXPECT_EQ(reduced.max_query_len, 3);
  EXPECT_EQ(reduced.seq_lens.data(), runner.metadata.at("layer1").common.seq_lens.data());

  const AttentionLayer& layer2 = runner.model.layer("layer2");
  const int width = layer2.num_heads() * layer2.head_size_v();
  const std::vector<float> full =
      step_testing::run_attention(layer2, runner.metadata.at("layer1"), keys);
  std::vector<int> gathered;
  for (const std::int32_t index : fast.logits_indices_padded) gathered.push_back(keys[index]);
  const std::vector<float> rows =
      step_testing::run_attention(layer2, runner.metadata.at("layer2"), gathered);
  for (int i = 0; i < fast.num_logits_indices; ++i) {
    const int token = fast.logits_indices_padded[i];
    const std::vector<float> expected(full.begin() + token * width,
                                      full.begin() + (token + 1) * width);
    const std::vector<float> actual(rows.begin() + i * width, rows.begin() + (i + 1) * width);
    EXPECT_NE(expected, std::vector<float>(width, 0.f)) << "token " << token;
    EXPECT_EQ(actual, expected) << "logits row " << i << " (token " << token << ")";
  }
}

TEST(FastPrefillEquivalenceTest, DecodeStepsKeepTheFullBatch) {
  FastPrefillRunner runner;
  runner.add_blocks(0, {3});
  runner.add_blocks(1, {6});
  runner.step({{0, 0, 4, 4, 0}, {1, 0, 2, 2, 0}});
  runner.step({{0, 4, 1, 4, 0}, {1, 2, 1, 2, 0}});
  EXPECT_FALSE(runner.fast.has_value());  // no prefill: no logits rows to stage
  const CommonAttentionMetadata& common = runner.metadata.at("layer2").common;
  EXPECT_EQ(common.num_actual_tokens, 4);  // the 2 decodes, padded to the 4-token graph
  EXPECT_EQ(I32(common.query_start_loc.begin(), common.query_start_loc.end()), (I32{0, 1, 2}));
}

}  // namespace
}  // namespace attnrt
