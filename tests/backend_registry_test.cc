// BackendRegistry, config-declared profiles and the built-in GPU profiles.

#include "attnrt/attention/backend_registry.h"

#include <gtest/gtest.h>

#include "attnrt/attention/backend_profile.h"
#include "attnrt/attention/forward_context.h"
#include "attnrt/core/error.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

class CountingBuilder : public AttentionMetadataBuilder {
 public:
  using AttentionMetadataBuilder::AttentionMetadataBuilder;
  AttentionCGSupport get_cudagraph_support(const EngineConfig&, const KVCacheSpec&) const override {
    return AttentionCGSupport::ALWAYS;
  }
  const AttentionMetadata& build(int, const CommonAttentionMetadata& common, bool) override {
    metadata_.common = common;
    ++builds;
    return metadata_;
  }
  int builds = 0;

 private:
  AttentionMetadata metadata_;
};

// A minimal executable backend: records kernel calls.
class FakeKernel : public AttentionBackend {
 public:
  std::string name() const override { return "FAKE_KERNEL"; }
  bool supports_spec_kind(KVSpecKind) const override { return true; }
  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& spec,
                                                           std::vector<std::string> names,
                                                           const EngineConfig& config,
                                                           Device device) const override {
    (void)config;
    return std::make_unique<CountingBuilder>(spec, std::move(names), device);
  }
  void write_kv(const KVWriteArgs&) const override { ++writes; }
  void forward(const AttentionForwardArgs&) const override { ++forwards; }
  mutable int writes = 0;
  mutable int forwards = 0;
};

BackendRegistry builtins_with_fake() {
  BackendRegistry registry;
  registry.add(std::make_shared<FakeKernel>());
  registry.set_default("FAKE_KERNEL");
  return registry;
}

TEST(BackendRegistry, FindsGetsAndResolvesTheDefault) {
  BackendRegistry registry = builtins_with_fake();
  EXPECT_EQ(registry.get("FAKE_KERNEL")->name(), "FAKE_KERNEL");
  EXPECT_EQ(registry.find("NOPE"), nullptr);
  EXPECT_EQ(registry.resolve("")->name(), "FAKE_KERNEL");
  const std::string unknown = error_of([&] { registry.get("NOPE"); });
  EXPECT_NE(unknown.find("unknown attention backend \"NOPE\""), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("FAKE_KERNEL"), std::string::npos) << unknown;
  EXPECT_NE(
      error_of([&] { registry.add(std::make_shared<FakeKernel>()); }).find("registered twice"),
      std::string::npos);
  EXPECT_NE(error_of([] { BackendRegistry().resolve(""); }).find("no default"), std::string::npos);
}

TEST(BackendRegistry, ConfigRegistryHasTheGpuProfilesAndTheConfigsOwn) {
  EngineConfig config;
  BackendProfileConfig mine;
  mine.name = "MY_BACKEND";
  mine.kernel = "FAKE_KERNEL";
  mine.cudagraph_support = AttentionCGSupport::UNIFORM_BATCH;
  mine.varlen_cudagraph_max_query_len = 4;
  mine.kernel_block_sizes = {{32, false}, {16, true}};
  mine.kv_cache_layouts = {KVCacheLayout::BLHNC};
  mine.spec_kinds = {AttentionType::full};
  config.backends.push_back(mine);
  const BackendRegistry registry = make_backend_registry(config, builtins_with_fake());
  for (const char* name : {"FLASH_ATTN", "FLASH_ATTN_FA2", "FLASH_ATTN_FA3", "FLASHINFER",
                           "TRITON_ATTN", "FLASHMLA", "MY_BACKEND", "FAKE_KERNEL"}) {
    EXPECT_NE(registry.find(name), nullptr) << name;
  }
  const AttentionBackend& backend = *registry.get("MY_BACKEND");
  const KVCacheSpec spec = KVCacheSpec::full(64, 2, 32, DType::bf16);
  const auto sizes = backend.get_supported_kernel_block_sizes(spec);
  EXPECT_EQ(describe_kernel_block_sizes(sizes), "[32, MultipleOf(16)]");
  EXPECT_TRUE(kernel_block_size_supported(sizes, 48));
  EXPECT_FALSE(kernel_block_size_supported(sizes, 40));
  EXPECT_EQ(backend.supported_kv_cache_layouts(), std::vector<KVCacheLayout>{KVCacheLayout::BLHNC});
  EXPECT_TRUE(backend.supports_spec_kind(KVSpecKind::full));
  EXPECT_FALSE(backend.supports_spec_kind(KVSpecKind::mla));
  EXPECT_TRUE(backend.executable());

  auto builder = backend.create_builder(spec, {"l0"}, config, Device::cpu());
  EXPECT_EQ(builder->get_cudagraph_support(config, spec), AttentionCGSupport::UNIFORM_BATCH);
  EXPECT_EQ(builder->get_varlen_cudagraph_max_query_len(config, spec), 4);
  CommonAttentionMetadata common;
  common.num_reqs = 3;
  EXPECT_EQ(builder->build(0, common).common.num_reqs, 3);  // built by the kernel's builder
}

TEST(BackendRegistry, GpuProfilesCarryVllmCapabilities) {
  EngineConfig config;
  config.speculative.num_speculative_tokens = 3;
  const BackendRegistry registry = make_backend_registry(config, builtins_with_fake());
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 64, DType::bf16);
  auto support = [&](const char* name) {
    return registry.get(name)
        ->create_builder(spec, {}, config, Device::cpu())
        ->get_cudagraph_support(config, spec);
  };
  auto varlen = [&](const char* name) {
    return registry.get(name)
        ->create_builder(spec, {}, config, Device::cpu())
        ->get_varlen_cudagraph_max_query_len(config, spec);
  };
  EXPECT_EQ(support("FLASH_ATTN_FA3"), AttentionCGSupport::ALWAYS);
  EXPECT_EQ(support("FLASH_ATTN_FA2"), AttentionCGSupport::UNIFORM_BATCH);
  EXPECT_EQ(varlen("FLASH_ATTN_FA2"), 4);  // 1 + num_speculative_tokens
  EXPECT_EQ(support("FLASHINFER"), AttentionCGSupport::UNIFORM_SINGLE_TOKEN_DECODE);
  EXPECT_EQ(varlen("FLASHINFER"), std::nullopt);
  EXPECT_FALSE(registry.get("FLASHINFER")->supports_device_cpu_query_lens_mismatch());
  EXPECT_TRUE(registry.get("FLASH_ATTN")->supports_device_cpu_query_lens_mismatch());
  EXPECT_EQ(support("TRITON_ATTN"), AttentionCGSupport::ALWAYS);
  EXPECT_TRUE(registry.get("FLASHMLA")->supports_spec_kind(KVSpecKind::mla));
  EXPECT_FALSE(registry.get("FLASHMLA")->supports_spec_kind(KVSpecKind::full));
  EXPECT_FALSE(registry.get("FLASHINFER")->executable());
}

TEST(BackendRegistry, PlanOnlyProfilesRefuseToExecute) {
  EngineConfig config;
  const BackendRegistry registry = make_backend_registry(config, builtins_with_fake());
  const AttentionBackend& flashinfer = *registry.get("FLASHINFER");
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 64, DType::bf16);
  auto builder = flashinfer.create_builder(spec, {"l0"}, config, Device::cpu());
  const std::string message = error_of([&] { builder->build(0, CommonAttentionMetadata{}); });
  EXPECT_NE(message.find("FLASHINFER is a plan-only profile"), std::string::npos) << message;
}

TEST(BackendRegistry, RejectsBadProfiles) {
  EngineConfig config;
  BackendProfileConfig bad;
  bad.name = "BAD";
  bad.kernel = "NO_SUCH_KERNEL";
  config.backends = {bad};
  EXPECT_NE(error_of([&] {
              make_backend_registry(config, builtins_with_fake());
            }).find("backends[0].kernel: profile BAD names kernel \"NO_SUCH_KERNEL\""),
            std::string::npos);
  bad.name = "FAKE_KERNEL";
  bad.kernel.clear();
  config.backends = {bad};
  EXPECT_NE(error_of([&] {
              make_backend_registry(config, builtins_with_fake());
            }).find("name of a built-in executable backend"),
            std::string::npos);
}

TEST(BackendRegistry, ForwardContextAssignsBackendsAndChecksTheAttentionType) {
  EngineConfig config;
  LayerConfig full;
  full.name = "l0";
  full.num_heads = full.num_kv_heads = 2;
  full.head_size = full.head_size_v = 32;
  LayerConfig mla = full;
  mla.name = "l1";
  mla.backend = "FLASHMLA";
  config.model.layers = {full, mla};
  const BackendRegistry registry = make_backend_registry(config, builtins_with_fake());
  const std::string message = error_of([&] { ForwardContext::from_config(config, &registry); });
  EXPECT_NE(message.find("layer l1: backend FLASHMLA does not serve full attention"),
            std::string::npos)
      << message;
  config.model.layers[1].backend = "FLASHINFER";
  const ForwardContext context = ForwardContext::from_config(config, &registry);
  EXPECT_EQ(context.at("l0").get_attn_backend()->name(), "FAKE_KERNEL");
  EXPECT_EQ(context.at("l1").get_attn_backend()->name(), "FLASHINFER");
  const ForwardContext bare = ForwardContext::from_config(config);
  EXPECT_NE(error_of([&] { bare.at("l0").get_attn_backend(); }).find("has no attention backend"),
            std::string::npos);
}

EngineConfig one_layer(const std::string& backend, const std::string& layout) {
  EngineConfig config;
  LayerConfig layer;
  layer.name = "l0";
  layer.num_heads = layer.num_kv_heads = 2;
  layer.head_size = layer.head_size_v = 32;
  layer.backend = backend;
  config.model.layers = {layer};
  config.cache.layout = parse_kv_cache_layout(layout);
  return config;
}

TEST(BackendRegistry, ProfileWhoseLayoutsExcludeTheCacheLayoutIsRefusedNamingItsPath) {
  EngineConfig config = one_layer("MINE", "LBNHC");
  BackendProfileConfig other;
  other.name = "OTHER";
  BackendProfileConfig mine;
  mine.name = "MINE";
  mine.kernel = "FAKE_KERNEL";
  mine.kv_cache_layouts = {KVCacheLayout::BLHNC, KVCacheLayout::LBHNC};
  config.backends = {other, mine};
  const BackendRegistry registry = make_backend_registry(config, builtins_with_fake());
  EXPECT_EQ(error_of([&] { ForwardContext::from_config(config, &registry); }),
            "layer l0: backends[1].kv_cache_layouts of profile MINE (BLHNC, LBHNC) excludes "
            "cache.layout LBNHC; add LBNHC to it, choose a cache.layout it lists, or give the "
            "layer another backend");
  config.cache.layout = KVCacheLayout::LBHNC;
  EXPECT_EQ(ForwardContext::from_config(config, &registry).at("l0").get_attn_backend()->name(),
            "MINE");
}

TEST(BackendRegistry, BuiltinProfileLayoutsAreCheckedToo) {
  const EngineConfig config = one_layer("FLASHINFER", "BLNHC");
  const BackendRegistry registry = make_backend_registry(config, builtins_with_fake());
  EXPECT_EQ(error_of([&] { ForwardContext::from_config(config, &registry); }),
            "layer l0: backend FLASHINFER reads KV caches in the layouts LBHNC, LBNHC only, but "
            "cache.layout is BLNHC; choose one of them as cache.layout, or give the layer another "
            "backend");
}

// A kernel whose tiles cannot take heads of 32 entries.
class NoHead32Kernel : public FakeKernel {
 public:
  std::string name() const override { return "NO_HEAD_32"; }
  bool supports_head_size(int head_size) const override { return head_size != 32; }
};

TEST(BackendRegistry, HeadSizesAreCheckedWhenALayerGetsItsBackend) {
  BackendRegistry builtins;
  builtins.add(std::make_shared<NoHead32Kernel>());
  builtins.set_default("NO_HEAD_32");
  EngineConfig config = one_layer("", "LBNHC");
  BackendProfileConfig profile;
  profile.name = "ON_IT";
  profile.kernel = "NO_HEAD_32";
  config.backends = {profile};
  const BackendRegistry registry = make_backend_registry(config, builtins);
  EXPECT_NE(error_of([&] {
              ForwardContext::from_config(config, &registry);
            }).find("layer l0: backend NO_HEAD_32 cannot run head size 32"),
            std::string::npos);
  // A profile answers with its kernel; a plan-only profile declares no limit.
  EXPECT_FALSE(registry.get("ON_IT")->supports_head_size(32));
  EXPECT_TRUE(registry.get("ON_IT")->supports_head_size(64));
  EXPECT_TRUE(registry.get("FLASHINFER")->supports_head_size(32));
  config.model.layers[0].backend = "ON_IT";
  EXPECT_NE(error_of([&] {
              ForwardContext::from_config(config, &registry);
            }).find("layer l0: backend ON_IT cannot run head size 32"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
