// build_attn_metadata (SEMANTICS §7.9) on a mixed batch — a chunked prefill, a decode and a
// spec-decode verification — with every field of each KV cache group's CommonAttentionMetadata
// computed by hand; builders per attention group, capture builds, micro-batch builders, and
// spaced kernel ids run end to end on the CPU reference backend.

#include "attnrt/runner/attn_metadata.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "runner_test_helpers.h"
#include "step_test_model.h"

namespace attnrt {
namespace {

using testing::error_of;
using testing::Flags;
using testing::graph;
using testing::I32;
using testing::I64;
using testing::vec;

class RecordingBuilder : public AttentionMetadataBuilder {
 public:
  explicit RecordingBuilder(const EngineConfig& config)
      : AttentionMetadataBuilder(KVCacheSpec::full(4, 1, 4, DType::f32), {}, Device::cpu()) {
    (void)config;
  }
  AttentionCGSupport get_cudagraph_support(const EngineConfig&, const KVCacheSpec&) const override {
    return AttentionCGSupport::ALWAYS;
  }
  const AttentionMetadata& build(int, const CommonAttentionMetadata& common, bool) override {
    ++num_builds;
    metadata_.common = common;
    return metadata_;
  }
  const AttentionMetadata& build_for_cudagraph_capture(
      const CommonAttentionMetadata& common) override {
    ++num_capture_builds;
    metadata_.common = common;
    return metadata_;
  }
  int num_builds = 0;
  int num_capture_builds = 0;

 private:
  AttentionMetadata metadata_;
};

// Three answers of 8 tokens: the reduced batch of fast prefill pads to 8.
class EightTokenGraphs : public GraphDispatcher {
 public:
  BatchExecutionDescriptor dispatch(int, int, std::optional<int>, int) const override {
    return graph(CUDAGraphMode::PIECEWISE, 8);
  }
};

// KV cache group 0: 4-token blocks (layers a, b); group 1: 8-token blocks split into 4-token
// kernel blocks (layer c with one backend, layer d with another); each group 2 builders.
struct MixedStep {
  MixedStep() : tables({{KernelBlockGeometry::unsplit(4), 4}, {{8, 4, 2, 2}, 2}}, 8, 16, 40) {
    groups.resize(2);
    add_group(0, {"a", "b"});
    add_group(1, {"c"});
    add_group(1, {"d"});
    // Slot 3: chunked prefill of 4 tokens after 2; slot 0: decode after 7; slot 5: verification
    // of 2 drafts + 1 after 5.
    append(3, {10, 11}, {3});
    append(0, {20, 21}, {1});
    append(5, {30, 31}, {5});
    batch.prepare(
        std::vector<ScheduledRequest>{{3, 2, 4, 10, 0}, {0, 7, 1, 7, 0}, {5, 5, 3, 4, 2}});
    batch.pad_to(graph(CUDAGraphMode::PIECEWISE, 12));
    tables.gather_block_tables(batch.idx_mapping(), batch.num_reqs_padded());
    tables.compute_slot_mappings(batch.idx_mapping(), batch.query_start_loc(), batch.positions(),
                                 batch.num_tokens_padded(), batch.is_padding());
    tables.translate_slot_mappings(groups);
  }

  void add_group(int g, std::vector<std::string> layers) {
    groups[g].emplace_back(nullptr, std::move(layers), KVCacheSpec::full(4, 1, 4, DType::f32), g);
    for (int i = 0; i < 2; ++i) {
      groups[g].back().metadata_builders.push_back(std::make_unique<RecordingBuilder>(config));
    }
  }
  void append(int req, I32 group0, I32 group1) {
    const std::span<const std::int32_t> ids[] = {group0, group1};
    tables.append_block_ids(req, ids, true);
  }
  RecordingBuilder& builder(int g, int i, int ubatch = 0) {
    return static_cast<RecordingBuilder&>(groups[g][i].get_metadata_builder(ubatch));
  }

  EngineConfig config;
  std::vector<std::vector<AttentionGroup>> groups;
  BlockTables tables;
  InputBatch batch{8, 16};
};

TEST(AttnMetadataTest, MixedBatchFieldsByHand) {
  MixedStep step;
  EightTokenGraphs graphs;
  FastPrefillHelper helper(16, graphs);
  const auto fast =
      helper.prepare(step.batch.logits_indices(), step.batch.num_reqs(), step.batch.cu_num_logits(),
                     step.batch.has_prefill(), BatchExecutionDescriptor::eager(3, 8));
  ASSERT_TRUE(fast.has_value());
  AttentionMetadataInputs inputs = make_attention_metadata_inputs(step.batch, step.tables);
  const bool causal[] = {true, false};
  inputs.causal_by_group = causal;
  inputs.fast_prefill = &*fast;
  AttentionMetadataByLayer out(step.groups);
  build_attn_metadata(step.groups, inputs, out);

  const I64 slots[2] = {
      // Group 0 (4-token blocks): A 10·4+2.., 11·4+0..; B 21·4+3; C 31·4+1..; then padding.
      {42, 43, 44, 45, 87, 125, 126, 127, -1, -1, -1, -1},
      // Group 1 (manager blocks 3, 1, 5 of 8 tokens): the manager slots 3·8+2.., 1·8+7, 5·8+5..
      {26, 27, 28, 29, 15, 45, 46, 47, -1, -1, -1, -1}};
  const I32 rows[2][3] = {{{10, 11, 0, 0}, {20, 21, 0, 0}, {30, 31, 0, 0}},
                          {{6, 7, 0, 0}, {2, 3, 0, 0}, {10, 11, 0, 0}}};
  for (int g = 0; g < 2; ++g) {
    SCOPED_TRACE(g);
    const CommonAttentionMetadata& c = out.common(g);
    EXPECT_EQ(vec(c.query_start_loc), (I32{0, 4, 5, 8}));
    EXPECT_EQ(vec(c.query_start_loc_cpu), (I32{0, 4, 5, 8}));
    EXPECT_EQ(vec(c.seq_lens), (I32{6, 8, 8}));
    EXPECT_EQ(vec(c.seq_lens_cpu), (I32{6, 8, 8}));
    EXPECT_EQ(c.num_reqs, 3);
    EXPECT_EQ(c.num_actual_tokens, 12);
    EXPECT_EQ(c.max_query_len, 4);
    EXPECT_EQ(c.max_seq_len, 8);
    EXPECT_EQ(vec(c.slot_mapping), slots[g]);
    ASSERT_EQ(c.block_table.num_rows, 3);
    EXPECT_EQ(c.block_table.num_cols, 4);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(vec(c.block_table.row(r)), rows[g][r]) << r;
    EXPECT_EQ(c.causal, g == 0);
    EXPECT_EQ(vec(c.positions), (I64{2, 3, 4, 5, 7, 5, 6, 7, 0, 0, 0, 0}));
    EXPECT_TRUE(c.encoder_seq_lens.empty());
    EXPECT_EQ(vec(c.logits_indices_padded), (I32{3, 4, 5, 6, 7, 7, 7, 7}));
    EXPECT_EQ(c.num_logits_indices, 5);
    EXPECT_EQ(c.max_logits_per_req, 3);
    EXPECT_EQ(c.device, Device::cpu());
  }
}

TEST(AttnMetadataTest, OneMetadataPerAttentionGroupSharedByItsLayers) {
  MixedStep step;
  AttentionMetadataByLayer out(step.groups);
  EXPECT_EQ(out.find("a"), nullptr);  // nothing built yet
  EXPECT_NE(error_of([&] { out.at("a"); }).find("has not run yet"), std::string::npos);
  build_attn_metadata(step.groups, make_attention_metadata_inputs(step.batch, step.tables), out);
  EXPECT_EQ(&out.at("a"), &out.at("b"));
  EXPECT_NE(&out.at("c"), &out.at("d"));
  EXPECT_EQ(out.at("c").common.slot_mapping.data(), out.at("d").common.slot_mapping.data());
  EXPECT_EQ(out.at("a").common.causal, true);
  EXPECT_FALSE(out.at("a").common.num_logits_indices.has_value());
  for (auto [g, i] : {std::pair{0, 0}, {1, 0}, {1, 1}}) {
    EXPECT_EQ(step.builder(g, i).num_builds, 1);
    EXPECT_EQ(step.builder(g, i).num_capture_builds, 0);
    EXPECT_EQ(step.builder(g, i, 1).num_builds, 0);
  }
  EXPECT_NE(error_of([&] { out.at("z"); }).find("no attention group"), std::string::npos);
}

TEST(AttnMetadataTest, CaptureAndMicroBatchesUseTheirBuilders) {
  MixedStep step;
  AttentionMetadataByLayer out(step.groups);
  AttentionMetadataInputs inputs = make_attention_metadata_inputs(step.batch, step.tables);
  inputs.for_cudagraph_capture = true;
  inputs.ubatch_idx = 1;
  build_attn_metadata(step.groups, inputs, out);
  for (auto [g, i] : {std::pair{0, 0}, {1, 0}, {1, 1}}) {
    EXPECT_EQ(step.builder(g, i, 1).num_capture_builds, 1);
    EXPECT_EQ(step.builder(g, i, 1).num_builds, 0);
    EXPECT_EQ(step.builder(g, i, 0).num_capture_builds, 0);
  }
  inputs.ubatch_idx = 2;
  EXPECT_NE(error_of([&] {
              build_attn_metadata(step.groups, inputs, out);
            }).find("micro-batch 2 has none"),
            std::string::npos);
}

TEST(AttnMetadataTest, InputsThatDoNotCoverTheGroupsAreErrors) {
  MixedStep step;
  AttentionMetadataByLayer out(step.groups);
  AttentionMetadataInputs inputs = make_attention_metadata_inputs(step.batch, step.tables);
  inputs.block_tables = inputs.block_tables.first(1);
  EXPECT_NE(error_of([&] {
              build_attn_metadata(step.groups, inputs, out);
            }).find("2 KV cache groups but 1 block tables"),
            std::string::npos);
  inputs = make_attention_metadata_inputs(step.batch, step.tables);
  inputs.num_reqs = 4;  // more requests than query_start_loc describes
  EXPECT_NE(error_of([&] {
              build_attn_metadata(step.groups, inputs, out);
            }).find("4 requests need query_start_loc of 5 entries"),
            std::string::npos);
  inputs = make_attention_metadata_inputs(step.batch, step.tables);
  std::vector<std::vector<AttentionGroup>> other(2);
  EXPECT_NE(error_of([&] {
              build_attn_metadata(other, inputs, out);
            }).find("KV cache group 0 has 0 attention groups"),
            std::string::npos);
}

// Two steps of two requests on `model` (layers layer0 and layer1, 16-token manager blocks);
// returns both layers' outputs of the second step. Without `translate`, slot mappings stay in
// manager slots.
std::vector<float> run_two_steps(step_testing::StepModel& model, bool translate) {
  auto& groups = model.attn.attn_groups;
  BlockTables tables = BlockTables::from_config(model.config, model.plan.kv_cache_config, groups);
  InputBatch batch(8, 64);
  AttentionMetadataByLayer out(groups);
  const I32 blocks_a = {3, 1};
  const I32 blocks_b = {2};
  tables.append_block_ids(0, std::vector<std::span<const std::int32_t>>{blocks_a}, true);
  tables.append_block_ids(1, std::vector<std::span<const std::int32_t>>{blocks_b}, true);
  const std::vector<ScheduledRequest> steps[2] = {
      {{0, 0, 5, 20, 0}, {1, 0, 9, 9, 0}},    // prefill chunks
      {{0, 5, 15, 20, 0}, {1, 9, 3, 9, 2}}};  // the prompt's rest; a verification of 2 drafts
  std::vector<float> outputs;
  for (const std::vector<ScheduledRequest>& requests : steps) {
    batch.prepare(requests);
    tables.gather_block_tables(batch.idx_mapping(), batch.num_reqs_padded());
    tables.compute_slot_mappings(batch.idx_mapping(), batch.query_start_loc(), batch.positions(),
                                 batch.num_tokens_padded());
    if (translate) tables.translate_slot_mappings(groups);
    build_attn_metadata(groups, make_attention_metadata_inputs(batch, tables), out);
    // Row key = request slot * 1000 + position: the same keys whatever the cache geometry.
    std::vector<int> keys;
    for (int i = 0; i < batch.num_reqs(); ++i) {
      for (int t = batch.query_start_loc()[i]; t < batch.query_start_loc()[i + 1]; ++t) {
        keys.push_back(batch.idx_mapping()[i] * 1000 + static_cast<int>(batch.positions()[t]));
      }
    }
    outputs.clear();
    for (const std::string name : {"layer0", "layer1"}) {
      const AttentionLayer& layer = model.layer(name);
      step_testing::write_kv(layer, keys, tables.slot_mapping(0));
      const std::vector<float> rows = step_testing::run_attention(layer, out.at(name), keys);
      outputs.insert(outputs.end(), rows.begin(), rows.end());
    }
  }
  return outputs;
}

TEST(AttnMetadataTest, SpacedKernelIdsRunLikeUnsplitBlocks) {
  using step_testing::small_config;
  step_testing::StepModel unsplit(small_config(2, 0, 16, "LBNHC"), make_cpu_reference_backend(),
                                  false);
  ASSERT_TRUE(unsplit.attn.attn_groups[0][0].kernel_geometry.dense());
  // BLHNC holds both layers in a block row: 4-token kernel blocks are spaced 8 apart.
  const auto split = std::make_shared<const step_testing::SplitReferenceBackend>(4);
  step_testing::StepModel spaced(small_config(2, 0, 16, "BLHNC"), split, true);
  ASSERT_EQ(spaced.attn.attn_groups[0][0].kernel_geometry, (KernelBlockGeometry{16, 4, 4, 8}));

  const std::vector<float> expected = run_two_steps(unsplit, true);
  EXPECT_EQ(run_two_steps(spaced, true), expected);
  // Manager slots written as if they were kernel slots land in the wrong kernel blocks.
  step_testing::StepModel untranslated(small_config(2, 0, 16, "BLHNC"), split, true);
  EXPECT_NE(run_two_steps(untranslated, false), expected);
}

TEST(AttnMetadataTest, UntranslatedSpacedGroupIsRefusedAtInit) {
  const auto split = std::make_shared<const step_testing::SplitReferenceBackend>(4);
  const std::string message = error_of([&] {
    step_testing::StepModel model(step_testing::small_config(2, 0, 16, "BLHNC"), split, false);
  });
  EXPECT_NE(message.find("attention group 0 of KV cache group 0"), std::string::npos) << message;
  EXPECT_NE(message.find("BLHNC"), std::string::npos) << message;
  EXPECT_NE(message.find("maps_slot_mapping"), std::string::npos) << message;
}

}  // namespace
}  // namespace attnrt
