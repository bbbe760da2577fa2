// init_attn_backend (SEMANTICS §7.7, §8.8, §0): KV-sharing registration, attention-group
// discovery (backend key, spec, query heads), fast-prefill wrapping, batch invariance, kernel block
// sizes, builders per micro-batch, workspace sharing and the slot-mapping decision. The metadata
// reservation bytes of §8.8 are out of scope (no reservation API yet).

#include <gtest/gtest.h>

#include "attnrt/backends/fast_prefill_backend.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/kv_sharing.h"
#include "error_of.h"
#include "fake_attention_backend.h"

namespace attnrt {
namespace {

// The options with one field set, for the tests of that field.
InitAttnBackendOptions batch_invariant() {
  InitAttnBackendOptions o;
  o.batch_invariant = true;
  return o;
}
InitAttnBackendOptions drafts_only(const std::set<std::string>& drafts) {
  InitAttnBackendOptions o;
  o.draft_layer_names = &drafts;
  return o;
}
InitAttnBackendOptions active_only(const std::set<std::string>& active) {
  InitAttnBackendOptions o;
  o.active_layer_names = &active;
  return o;
}

using testing::error_of;

using testing::fake_backend;
using testing::fake_builder;
using testing::FakeCapabilities;
using Names = std::vector<std::string>;

// A model assembled by hand: layers with their backends, and the KV cache planned for them.
struct Model {
  Model() {
    config.cache.block_size = 16;
    config.cache.memory = 1 << 20;
  }

  void add(const std::string& name, AttentionBackendPtr backend, int num_heads = 8,
           const std::string& target = "") {
    LayerConfig layer;
    layer.name = name;
    layer.num_heads = num_heads;
    layer.num_kv_heads = 1;
    layer.head_size = 64;
    layer.kv_sharing_target = target;
    AttentionLayer attention(layer);
    attention.set_attn_backend(std::move(backend));
    context.add(std::move(attention));
  }

  // Groups of the owning layers only: the sharing layers join in init_attn_backend.
  KVCacheConfig plan(KVCacheLayout layout = KVCacheLayout::LBNHC) const {
    return get_kv_cache_config_from_groups(
        get_kv_cache_groups(get_kv_cache_spec(context, config.cache)), config.cache.memory, layout);
  }

  InitAttnBackendResult init(KVCacheConfig& kv, bool maps_slot_mapping = false,
                             const std::set<std::string>& slot_mapped_layers = {}) const {
    InitAttnBackendOptions options;
    options.maps_slot_mapping = maps_slot_mapping;
    options.slot_mapped_layers = slot_mapped_layers;
    return init_attn_backend(kv, config, context, Device::cpu(), options);
  }

  EngineConfig config;
  ForwardContext context;
};

// The layer names of every attention group, per KV cache group.
std::vector<std::vector<Names>> layer_names(const InitAttnBackendResult& result) {
  std::vector<std::vector<Names>> names;
  for (const auto& groups : result.attn_groups) {
    names.emplace_back();
    for (const AttentionGroup& group : groups) names.back().push_back(group.layer_names);
  }
  return names;
}

TEST(InitAttnBackend, QueryHeadCountsSplitGroupsAndKernelBlocksSplitBuilders) {
  Model model;
  model.config.cache.block_size = 128;
  FakeCapabilities caps;
  caps.kernel_block_sizes = {64};
  const auto backend = fake_backend("INDEXER", caps);
  model.add("a", backend, 8);
  model.add("b", backend, 8);
  model.add("c", backend, 4);
  KVCacheConfig kv = model.plan();
  const InitAttnBackendResult result = model.init(kv);

  EXPECT_EQ(layer_names(result), (std::vector<std::vector<Names>>{{{"a", "b"}, {"c"}}}));
  EXPECT_EQ(result.attn_groups[0][0].num_heads_q, 8);
  EXPECT_EQ(result.attn_groups[0][1].num_heads_q, 4);
  EXPECT_EQ(result.kernel_block_sizes, (std::vector<int>{64}));
  // Groups keep the manager spec; builders see the kernel block size.
  const AttentionGroup& ab = result.attn_groups[0][0];
  EXPECT_EQ(ab.kv_cache_spec.block_size, 128);
  EXPECT_EQ(ab.get_metadata_builder().kv_cache_spec().block_size, 64);
  EXPECT_EQ(ab.get_metadata_builder().layer_names(), (Names{"a", "b"}));
  // LBNHC pages stay dense when split: kernel ids b*2 + j, no translation needed.
  EXPECT_EQ(ab.kernel_geometry, (KernelBlockGeometry{128, 64, 2, 2}));
  EXPECT_FALSE(ab.slot_mappings_translated);
  EXPECT_EQ(result.cg_support, AttentionCGSupportInfo{});
}

TEST(InitAttnBackend, EmptyKvCacheGroupGetsNoAttentionGroupAndNoBuilder) {
  Model model;
  const auto backend = fake_backend("FA");
  model.add("layer0", backend);
  KVCacheConfig kv = model.plan();
  kv.kv_cache_groups.push_back(KVCacheGroupSpec{{}, KVCacheSpec::full(32, 1, 64, DType::bf16)});
  const InitAttnBackendResult result = model.init(kv);

  ASSERT_EQ(result.attn_groups.size(), 2u);
  EXPECT_EQ(result.attn_groups[1].size(), 0u);
  EXPECT_EQ(result.kernel_block_sizes, (std::vector<int>{16, 32}));
  EXPECT_EQ(*backend->builders_created, 1);
}

TEST(InitAttnBackend, BatchInvarianceIsCheckedBeforeAnyBuilder) {
  Model model;
  FakeCapabilities invariant;
  invariant.batch_invariance = true;
  const auto first = fake_backend("FIRST", invariant);
  const auto second = fake_backend("SECOND");
  model.add("first", first);
  model.add("second", second);
  KVCacheConfig kv = model.plan();
  const std::string message = error_of([&] {
    init_attn_backend(kv, model.config, model.context, Device::cpu(), batch_invariant());
  });
  EXPECT_NE(message.find("batch_invariant mode is not supported"), std::string::npos) << message;
  EXPECT_NE(message.find("SECOND"), std::string::npos) << message;
  EXPECT_EQ(*first->builders_created + *second->builders_created, 0);

  const InitAttnBackendResult result = model.init(kv);
  EXPECT_EQ(layer_names(result), (std::vector<std::vector<Names>>{{{"first"}, {"second"}}}));
  EXPECT_EQ(*first->builders_created + *second->builders_created, 2);
}

TEST(InitAttnBackend, KvSharingLayersJoinTheirTargetsGroupOnce) {
  Model model;
  const auto backend = fake_backend("FA");
  model.add("l0", backend);
  model.add("l1", backend);
  model.add("l2", backend, 8, "l0");
  KVCacheConfig kv = model.plan();
  ASSERT_EQ(kv.kv_cache_groups[0].layer_names, (Names{"l0", "l1"}));
  const InitAttnBackendResult result = model.init(kv);
  EXPECT_EQ(kv.kv_cache_groups[0].layer_names, (Names{"l0", "l1", "l2"}));
  EXPECT_EQ(layer_names(result), (std::vector<std::vector<Names>>{{{"l0", "l1", "l2"}}}));

  // A config that already lists the sharing layer (as plan_kv_cache does) is not extended again.
  model.init(kv);
  EXPECT_EQ(kv.kv_cache_groups[0].layer_names, (Names{"l0", "l1", "l2"}));
}

TEST(InitAttnBackend, ErrorLeavesTheKvCacheConfigUnchanged) {
  Model model;
  model.add("l0", fake_backend("FA"));
  model.add("l1", fake_backend("FA"), 8, "l0");
  KVCacheConfig kv = model.plan();
  const std::string message = error_of([&] {
    init_attn_backend(kv, model.config, model.context, Device::cpu(), batch_invariant());
  });
  EXPECT_NE(message.find("batch_invariant"), std::string::npos) << message;
  EXPECT_EQ(kv.kv_cache_groups[0].layer_names, (Names{"l0"}));
}

TEST(InitAttnBackend, FastPrefillLayersShareOneWrappedGroup) {
  Model model;
  model.config.cache.kv_sharing_fast_prefill = true;
  const auto backend = fake_backend("X");
  model.add("l0", backend);
  model.add("l1", backend);
  model.add("l2", backend, 8, "l0");
  model.add("l3", backend, 8, "l1");
  model.add("d0", backend, 8, "l0");
  KVCacheConfig kv = model.plan();
  const std::set<std::string> drafts = {"d0"};
  InitAttnBackendResult result =
      init_attn_backend(kv, model.config, model.context, Device::cpu(), drafts_only(drafts));

  EXPECT_EQ(layer_names(result),
            (std::vector<std::vector<Names>>{{{"l0", "l1", "d0"}, {"l2", "l3"}}}));
  const AttentionGroup& fast = result.attn_groups[0][1];
  EXPECT_EQ(fast.backend->name(), "FastPrefillX");
  EXPECT_TRUE(is_fast_prefill_backend(*fast.backend));
  EXPECT_FALSE(is_fast_prefill_backend(*result.attn_groups[0][0].backend));
  auto& wrapper =
      dynamic_cast<FastPrefillMetadataBuilder&>(result.attn_groups[0][1].get_metadata_builder());
  EXPECT_EQ(fake_builder(wrapper.wrapped()).layer_names(), (Names{"l2", "l3"}));
}

TEST(InitAttnBackend, ActiveLayersKeepTheGroupOrder) {
  Model model;
  const auto backend = fake_backend("FA");
  for (const char* name : {"z", "a", "m", "b"}) model.add(name, backend);
  KVCacheConfig kv = model.plan();
  const std::set<std::string> active = {"a", "b", "z"};  // iterates a, b, z
  const InitAttnBackendResult result =
      init_attn_backend(kv, model.config, model.context, Device::cpu(), active_only(active));
  EXPECT_EQ(layer_names(result), (std::vector<std::vector<Names>>{{{"z", "a", "b"}}}));
}

TEST(InitAttnBackend, NamesOutsideTheForwardContextAreDropped) {
  Model model;
  model.add("l0", fake_backend("FA"));
  KVCacheConfig kv = model.plan();
  kv.kv_cache_groups[0].layer_names.push_back("runner_only");
  const InitAttnBackendResult result = model.init(kv);
  EXPECT_EQ(layer_names(result), (std::vector<std::vector<Names>>{{{"l0"}}}));
}

TEST(InitAttnBackend, OneBuilderPerMicroBatchAndTheWeakestSupport) {
  Model model;
  model.config.parallel.num_ubatches = 2;
  model.add("l0", fake_backend("FULL", testing::cg_caps(AttentionCGSupport::ALWAYS)));
  model.add("l1", fake_backend("UNIFORM", testing::cg_caps(AttentionCGSupport::UNIFORM_BATCH)));
  KVCacheConfig kv = model.plan();
  const InitAttnBackendResult result = model.init(kv);
  for (const AttentionGroup& group : result.attn_groups[0]) {
    ASSERT_EQ(group.metadata_builders.size(), 2u);
    EXPECT_NE(&group.get_metadata_builder(0), &group.get_metadata_builder(1));
  }
  EXPECT_THROW(result.attn_groups[0][0].get_metadata_builder(2), Error);
  EXPECT_EQ(result.cg_support,
            (AttentionCGSupportInfo{AttentionCGSupport::UNIFORM_BATCH, "UNIFORM"}));
}

TEST(InitAttnBackend, FirstProvidedWorkspaceGoesToEveryLaterAcceptingBuilder) {
  Model model;
  model.config.parallel.num_ubatches = 2;
  FakeCapabilities consumer;
  consumer.accepts_workspace = true;
  FakeCapabilities provider = consumer;
  provider.provides_workspace = true;
  model.add("early", fake_backend("CONSUMER", consumer));
  model.add("flashinfer", fake_backend("PROVIDER", provider));
  model.add("late", fake_backend("CONSUMER2", consumer));
  KVCacheConfig kv = model.plan();
  InitAttnBackendResult result = model.init(kv);
  auto& groups = result.attn_groups[0];
  auto builder = [&](int group, int ubatch) -> testing::FakeBuilder& {
    return fake_builder(
        const_cast<AttentionMetadataBuilder&>(groups[group].get_metadata_builder(ubatch)));
  };
  const std::shared_ptr<Buffer> workspace = builder(1, 0).own_workspace;
  ASSERT_NE(workspace, nullptr);
  EXPECT_EQ(builder(0, 0).received_workspace, nullptr);  // came before the provider
  EXPECT_EQ(builder(0, 1).received_workspace, nullptr);
  EXPECT_EQ(builder(1, 0).received_workspace, nullptr);  // the provider keeps its own
  EXPECT_EQ(builder(1, 1).received_workspace, workspace);
  EXPECT_EQ(builder(1, 1).own_workspace, nullptr);  // never asked to provide a second one
  EXPECT_EQ(builder(2, 0).received_workspace, workspace);
  EXPECT_EQ(builder(2, 1).received_workspace, workspace);
}

// Two layers in BLHNC, 32-token blocks split into 16-token kernel blocks: a manager block is
// one row of 2 layers × 2 kernel pages, so kernel ids are spaced 4 apart (SEMANTICS §0, §8.6).
struct SpacedModel : Model {
  SpacedModel() {
    config.cache.block_size = 32;
    FakeCapabilities caps;
    caps.kernel_block_sizes = {16};
    add("l0", fake_backend("SPLIT", caps));
    add("l1", fake_backend("SPLIT2", caps));
    kv = plan(KVCacheLayout::BLHNC);
  }
  KVCacheConfig kv;
};

TEST(InitAttnBackendSlots, UntranslatedSpacedGroupIsAnError) {
  SpacedModel model;
  const std::string message = error_of([&] { model.init(model.kv); });
  EXPECT_NE(message.find("attention group 0 of KV cache group 0"), std::string::npos) << message;
  EXPECT_NE(message.find("BLHNC"), std::string::npos) << message;
  EXPECT_NE(message.find("maps_slot_mapping"), std::string::npos) << message;
  EXPECT_NE(message.find("LBNHC"), std::string::npos) << message;
}

TEST(InitAttnBackendSlots, CallerTranslatingEverySlotMapping) {
  SpacedModel model;
  const InitAttnBackendResult result = model.init(model.kv, /*maps_slot_mapping=*/true);
  EXPECT_EQ(result.kernel_block_sizes, (std::vector<int>{16}));
  for (const AttentionGroup& group : result.attn_groups[0]) {
    EXPECT_TRUE(group.slot_mappings_translated);
    EXPECT_EQ(group.kernel_geometry, (KernelBlockGeometry{32, 16, 2, 4}));
  }
  // Block 2 offset 5 → kernel block 2*4 + 0; block 2 offset 20 → kernel block 2*4 + 1, offset 4.
  std::vector<std::int64_t> slots = {2 * 32 + 5, 2 * 32 + 20, PAD_SLOT_ID, 0};
  result.attn_groups[0][0].map_to_kernel_slot_mapping(slots);
  EXPECT_EQ(slots, (std::vector<std::int64_t>{8 * 16 + 5, 9 * 16 + 4, PAD_SLOT_ID, 0}));
}

TEST(InitAttnBackendSlots, SlotMappedLayersTranslateOnlyTheirGroups) {
  SpacedModel model;
  const std::string message = error_of([&] { model.init(model.kv, false, {"l0"}); });
  EXPECT_NE(message.find("attention group 1 of KV cache group 0 (backend SPLIT2, layers l1)"),
            std::string::npos)
      << message;
  const InitAttnBackendResult result = model.init(model.kv, false, {"l0", "l1"});
  EXPECT_TRUE(result.attn_groups[0][0].slot_mappings_translated);
  EXPECT_TRUE(result.attn_groups[0][1].slot_mappings_translated);
}

TEST(InitAttnBackendSlots, DenseGroupsNeedNoTranslation) {
  SpacedModel model;
  KVCacheConfig compact = model.plan(KVCacheLayout::LBNHC);
  const InitAttnBackendResult result = model.init(compact, false, {"l0"});
  const AttentionGroup& l0 = result.attn_groups[0][0];
  const AttentionGroup& l1 = result.attn_groups[0][1];
  EXPECT_TRUE(l0.slot_mappings_translated);
  EXPECT_FALSE(l1.slot_mappings_translated);
  EXPECT_EQ(l1.kernel_geometry, (KernelBlockGeometry{32, 16, 2, 2}));
  std::vector<std::int64_t> slots = {69, 84, PAD_SLOT_ID};
  l1.map_to_kernel_slot_mapping(slots);
  EXPECT_EQ(slots, (std::vector<std::int64_t>{69, 84, PAD_SLOT_ID}));  // dense: identity
}

TEST(InitAttnBackend, LayerWithoutBackendIsNamed) {
  Model model;
  LayerConfig layer;
  layer.name = "bare";
  layer.num_heads = 1;
  layer.num_kv_heads = 1;
  layer.head_size = 64;
  model.context.add(AttentionLayer(layer));
  KVCacheConfig kv = model.plan();
  const std::string message = error_of([&] { model.init(kv); });
  EXPECT_NE(message.find("bare"), std::string::npos) << message;
}

// A backend whose kernels refuse one head size and read only the given layouts.
class PickyBackend : public testing::FakeBackend {
 public:
  PickyBackend(int refused_head_size, std::vector<KVCacheLayout> layouts)
      : FakeBackend("PICKY"), refused_(refused_head_size), layouts_(std::move(layouts)) {}
  bool supports_head_size(int head_size) const override { return head_size != refused_; }
  std::vector<KVCacheLayout> supported_kv_cache_layouts() const override { return layouts_; }

 private:
  int refused_;
  std::vector<KVCacheLayout> layouts_;
};

TEST(InitAttnBackend, HeadSizeTheBackendCannotRunIsRefusedNamingLayerSizeAndBackend) {
  Model model;
  model.add("a", std::make_shared<const PickyBackend>(64, std::vector<KVCacheLayout>{}));
  KVCacheConfig kv = model.plan();
  EXPECT_EQ(error_of([&] { model.init(kv); }),
            "layer a: backend PICKY cannot run head size 64 (head_size 64, head_size_v 64); "
            "choose a backend whose kernels take it");
  Model fine;
  fine.add("a", std::make_shared<const PickyBackend>(96, std::vector<KVCacheLayout>{}));
  KVCacheConfig fine_kv = fine.plan();
  EXPECT_EQ(fine.init(fine_kv).attn_groups.size(), 1u);
}

TEST(InitAttnBackend, LayoutOutsideTheBackendsListIsRefused) {
  Model model;
  const std::vector<KVCacheLayout> lbhnc_only = {KVCacheLayout::LBHNC};
  model.add("a", std::make_shared<const PickyBackend>(0, lbhnc_only));
  KVCacheConfig kv = model.plan(KVCacheLayout::LBNHC);
  EXPECT_NE(error_of([&] { model.init(kv); })
                .find("layer a: backend PICKY reads KV caches in the layouts LBHNC only, but "
                      "cache.layout is LBNHC"),
            std::string::npos);
  KVCacheConfig lbhnc = model.plan(KVCacheLayout::LBHNC);
  EXPECT_EQ(model.init(lbhnc).attn_groups.size(), 1u);
}

TEST(InitAttnBackend, SplitBlocksWhoseKernelIdsPassInt32NameCacheMemory) {
  Model model;
  model.config.cache.block_size = 128;
  FakeCapabilities caps;
  caps.kernel_block_sizes = {64};
  model.add("a", fake_backend("HALVES", caps));
  KVCacheConfig kv = model.plan();
  kv.num_blocks = (1 << 30) + 1;  // kernel ids up to 2^31 + 1
  const std::string message = error_of([&] { model.init(kv); });
  EXPECT_NE(message.find("cache.memory: KV cache group 0 splits 1073741825 blocks"),
            std::string::npos)
      << message;
  kv.num_blocks = 1 << 30;  // the last kernel id is 2^31 - 1
  EXPECT_EQ(model.init(kv).kernel_block_sizes, (std::vector<int>{64}));
}

}  // namespace
}  // namespace attnrt
