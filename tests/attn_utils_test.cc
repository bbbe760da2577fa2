// attn_utils checks (SEMANTICS §7.1–§7.4, §7.6): CUDA-graph support, the query-lens mismatch and
// varlen checks of adaptive verification (§8.1), fast-prefill eligibility (§8.3), and the derived
// facts of §9.

#include "attnrt/runner/attn_utils.h"

#include <gtest/gtest.h>

#include "attnrt/core/error.h"
#include "attnrt/runner/cudagraph_resolution.h"
#include "fake_attention_backend.h"

namespace attnrt {
namespace {

using testing::cg_caps;
using testing::fake_backend;
using testing::FakeCapabilities;
using S = AttentionCGSupport;
using Names = std::set<std::string>;

const KVCacheSpec kSpec = KVCacheSpec::full(16, 1, 128, DType::bf16);

AttentionGroup group_with_builder(std::shared_ptr<const AttentionBackend> backend,
                                  std::vector<std::string> layers, const EngineConfig& config,
                                  const KVCacheSpec& spec = kSpec) {
  AttentionGroup group(std::move(backend), std::move(layers), spec, 0);
  group.create_metadata_builders(config, Device::cpu(), std::nullopt);
  return group;
}

// §8.1 setup: a target group whose backend tolerates the mismatch and replays any batch, and a
// draft group whose backend does not, with UNIFORM_BATCH builders (varlen bound `draft_bound`).
class TargetAndDraft : public ::testing::Test {
 protected:
  std::vector<std::vector<AttentionGroup>> groups(S draft_support = S::UNIFORM_BATCH,
                                                  std::optional<int> draft_bound = 8) {
    std::vector<std::vector<AttentionGroup>> all(1);
    all[0].push_back(group_with_builder(fake_backend("_TargetBackend"), {"target"}, config));
    FakeCapabilities draft = cg_caps(draft_support, draft_bound);
    draft.query_lens_mismatch = false;
    all[0].push_back(group_with_builder(fake_backend("_DraftBackend", draft), {"draft"}, config));
    return all;
  }

  EngineConfig config;
  const Names target = {"target"};
};

TEST_F(TargetAndDraft, WeakestSupportNamesItsBackend) {
  const AttentionCGSupportInfo info = get_attn_cg_support(groups(), config);
  EXPECT_EQ(info, (AttentionCGSupportInfo{S::UNIFORM_BATCH, "_DraftBackend"}));
}

TEST_F(TargetAndDraft, CheckedLayersRestrictTheGroups) {
  const auto all = groups();
  EXPECT_EQ(get_attn_cg_support(all, config, &target), (AttentionCGSupportInfo{S::ALWAYS, {}}));
  EXPECT_EQ(get_query_lens_mismatch_unsupported_backend(all, &target), std::nullopt);
}

TEST_F(TargetAndDraft, GroupSharedWithTheTargetIsChecked) {
  auto all = groups();
  all[0][1].layer_names.push_back("target");
  EXPECT_EQ(get_attn_cg_support(all, config, &target).min_cg_support, S::UNIFORM_BATCH);
  EXPECT_EQ(get_query_lens_mismatch_unsupported_backend(all, &target), "_DraftBackend");
}

TEST_F(TargetAndDraft, UncheckedMismatchNamesTheFirstUnsupportingGroup) {
  EXPECT_EQ(get_query_lens_mismatch_unsupported_backend(groups()), "_DraftBackend");
}

TEST_F(TargetAndDraft, VarlenBoundMustCoverTheQueryLength) {
  const auto all = groups();
  EXPECT_EQ(get_varlen_cudagraph_unsupported_backend(all, config, 8), std::nullopt);
  EXPECT_EQ(get_varlen_cudagraph_unsupported_backend(all, config, 9),
            (VarlenUnsupportedBackend{"_DraftBackend", 8}));
  EXPECT_EQ(get_varlen_cudagraph_unsupported_backend(all, config, 9, &target), std::nullopt);
}

TEST_F(TargetAndDraft, NeverFailsVarlenWithoutABoundWhateverItReports) {
  // The draft builder reports bound 8, but a NEVER builder has no FULL graphs to replay.
  EXPECT_EQ(get_varlen_cudagraph_unsupported_backend(groups(S::NEVER, 8), config, 1),
            (VarlenUnsupportedBackend{"_DraftBackend", std::nullopt}));
}

TEST_F(TargetAndDraft, UniformBatchWithoutABoundFailsWithNoBound) {
  EXPECT_EQ(
      get_varlen_cudagraph_unsupported_backend(groups(S::UNIFORM_BATCH, std::nullopt), config, 1),
      (VarlenUnsupportedBackend{"_DraftBackend", std::nullopt}));
}

// §8.1 10–11: a sparse-MLA-like builder of UNIFORM_BATCH level whose varlen bound is the decode
// query length 1 + k.
TEST(AttnUtilsSparseMla, UniformBatchBuilderGetsFullDecodeGraphsAndItsVarlenBound) {
  const KVCacheSpec mla = KVCacheSpec::mla(64, 576, DType::bf16);
  for (const int k : {0, 7}) {
    SCOPED_TRACE(k);
    EngineConfig config;
    config.speculative.num_speculative_tokens = k;
    std::vector<std::vector<AttentionGroup>> groups(1);
    groups[0].push_back(
        group_with_builder(fake_backend("FLASHINFER_MLA_SPARSE", cg_caps(S::UNIFORM_BATCH, 1 + k)),
                           {"layer0"}, config, mla));

    const AttentionCGSupportInfo info = get_attn_cg_support(groups, config);
    EXPECT_EQ(info.min_cg_support, S::UNIFORM_BATCH);
    const CUDAGraphMode mode = resolve_cudagraph_mode(CUDAGraphMode::FULL, info.min_cg_support,
                                                      info.min_cg_attn_backend, 1 + k)
                                   .mode;
    EXPECT_NE(mode.mixed_mode(), CUDAGraphMode::FULL);
    EXPECT_EQ(mode.decode_mode(), CUDAGraphMode::FULL);

    EXPECT_EQ(get_query_lens_mismatch_unsupported_backend(groups), std::nullopt);
    EXPECT_EQ(get_varlen_cudagraph_unsupported_backend(groups, config, 1 + k), std::nullopt);
    EXPECT_EQ(get_varlen_cudagraph_unsupported_backend(groups, config, 2 + k),
              (VarlenUnsupportedBackend{"FLASHINFER_MLA_SPARSE", 1 + k}));
  }
}

TEST(AttnUtilsCgSupport, TiesKeepTheFirstWeakestBackend) {
  EngineConfig config;
  std::vector<std::vector<AttentionGroup>> groups(2);
  groups[0].push_back(group_with_builder(fake_backend("A", cg_caps(S::ALWAYS)), {"a"}, config));
  groups[0].push_back(
      group_with_builder(fake_backend("B", cg_caps(S::UNIFORM_BATCH)), {"b"}, config));
  groups[1].push_back(
      group_with_builder(fake_backend("C", cg_caps(S::UNIFORM_BATCH)), {"c"}, config));
  EXPECT_EQ(get_attn_cg_support(groups, config), (AttentionCGSupportInfo{S::UNIFORM_BATCH, "B"}));
  groups[1].push_back(group_with_builder(fake_backend("D", cg_caps(S::UNIFORM_SINGLE_TOKEN_DECODE)),
                                         {"d"}, config));
  EXPECT_EQ(get_attn_cg_support(groups, config),
            (AttentionCGSupportInfo{S::UNIFORM_SINGLE_TOKEN_DECODE, "D"}));
}

TEST(AttnUtilsCgSupport, NothingCheckedIsAlwaysWithNoBackend) {
  EngineConfig config;
  EXPECT_EQ(get_attn_cg_support({}, config), (AttentionCGSupportInfo{S::ALWAYS, std::nullopt}));
  std::vector<std::vector<AttentionGroup>> empty_lists(2);
  EXPECT_EQ(get_attn_cg_support(empty_lists, config), AttentionCGSupportInfo{});
}

TEST(AttnUtilsCgSupport, GroupWithoutBuilderIsAnError) {
  EngineConfig config;
  std::vector<std::vector<AttentionGroup>> groups(1);
  groups[0].emplace_back(fake_backend("LONELY"), std::vector<std::string>{"x"}, kSpec, 0);
  try {
    get_attn_cg_support(groups, config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LONELY"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("micro-batch 0"), std::string::npos) << e.what();
  }
}

TEST(AttentionCGSupportInfoTest, NarrowTightensOnlyWhenStrictlyWeaker) {
  const AttentionCGSupportInfo start;
  EXPECT_EQ(start.narrow(S::ALWAYS, "X"), start);  // a tie keeps the (absent) backend
  const AttentionCGSupportInfo uniform = start.narrow(S::UNIFORM_BATCH, "Encoder");
  EXPECT_EQ(uniform, (AttentionCGSupportInfo{S::UNIFORM_BATCH, "Encoder"}));
  EXPECT_EQ(uniform.narrow(S::UNIFORM_BATCH, "Other"), uniform);
  EXPECT_EQ(uniform.narrow(S::ALWAYS, "Other"), uniform);
  EXPECT_EQ(uniform.narrow(S::NEVER, "Other"), (AttentionCGSupportInfo{S::NEVER, "Other"}));
  EXPECT_EQ(start.min_cg_support, S::ALWAYS);  // narrow returns a new info
}

// §8.3: fast-prefill eligibility over hand-built layer stacks.
ForwardContext layer_stack(const std::vector<std::pair<std::string, std::string>>& layers) {
  ForwardContext context;
  for (const auto& [name, target] : layers) {
    LayerConfig layer;
    layer.name = name;
    layer.num_heads = 2;
    layer.num_kv_heads = 1;
    layer.head_size = 8;
    layer.kv_sharing_target = target;
    context.add(AttentionLayer(layer));
  }
  return context;
}

EngineConfig fast_prefill_config(bool enabled) {
  EngineConfig config;
  config.cache.kv_sharing_fast_prefill = enabled;
  return config;
}

TEST(FastPrefillEligibility, NoSharingLayersNoneEligible) {
  EXPECT_EQ(get_kv_sharing_fast_prefill_eligible_layers(fast_prefill_config(true),
                                                        layer_stack({{"t0", ""}, {"t1", ""}})),
            Names{});
}

TEST(FastPrefillEligibility, TrailingRunOfSharingLayers) {
  const EngineConfig config = fast_prefill_config(true);
  EXPECT_EQ(get_kv_sharing_fast_prefill_eligible_layers(
                config, layer_stack({{"t0", ""}, {"t1", ""}, {"t2", "t1"}, {"t3", "t1"}})),
            (Names{"t2", "t3"}));
  // t2 owns its cache, so it ends the run although t1 shares.
  EXPECT_EQ(get_kv_sharing_fast_prefill_eligible_layers(
                config, layer_stack({{"t0", ""}, {"t1", "t0"}, {"t2", ""}, {"t3", "t0"}})),
            (Names{"t3"}));
}

TEST(FastPrefillEligibility, DraftLayersAreSkippedNotCollected) {
  const EngineConfig config = fast_prefill_config(true);
  const ForwardContext context =
      layer_stack({{"t0", ""}, {"t1", ""}, {"t2", "t1"}, {"t3", "t1"}, {"d0", "t1"}, {"d1", "t1"}});
  EXPECT_EQ(get_kv_sharing_fast_prefill_eligible_layers(config, context),
            (Names{"t2", "t3", "d0", "d1"}));
  const Names drafts = {"d0", "d1"};
  EXPECT_EQ(get_kv_sharing_fast_prefill_eligible_layers(config, context, &drafts),
            (Names{"t2", "t3"}));
}

TEST(FastPrefillEligibility, FlagOffNoneEligible) {
  EXPECT_EQ(get_kv_sharing_fast_prefill_eligible_layers(fast_prefill_config(false),
                                                        layer_stack({{"t0", "t0"}})),
            Names{});
}

}  // namespace
}  // namespace attnrt
