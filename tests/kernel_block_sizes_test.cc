// Kernel block size selection (SEMANTICS §3.2, §8.5). The Mamba and HiSparse cases of §8.5 are out
// of scope (SEMANTICS §0); an encoder-only group stands in for "a group that keeps its size".

#include "attnrt/runner/kernel_block_sizes.h"

#include <gtest/gtest.h>

#include "attnrt/core/error.h"
#include "fake_attention_backend.h"

namespace attnrt {
namespace {

using testing::FakeBackend;
using Sizes = std::vector<KernelBlockSize>;

const KVCacheSpec kSpec = KVCacheSpec::full(16, 1, 64, DType::bf16);

FakeBackend backend_accepting(std::string name, Sizes sizes) {
  testing::FakeCapabilities caps;
  caps.kernel_block_sizes = std::move(sizes);
  return FakeBackend(std::move(name), caps);
}

int select(int manager_block_size, const std::vector<FakeBackend>& backends) {
  std::vector<const AttentionBackend*> pointers;
  for (const FakeBackend& backend : backends) pointers.push_back(&backend);
  return select_common_block_size(manager_block_size, pointers, kSpec);
}

std::string select_error(int manager_block_size, const std::vector<FakeBackend>& backends) {
  try {
    select(manager_block_size, backends);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SelectCommonBlockSize, ManagerSizeWhenEveryBackendAcceptsIt) {
  EXPECT_EQ(select(128, {backend_accepting("A", {MultipleOf{32}}),
                         backend_accepting("B", {64, MultipleOf{16}})}),
            128);
}

TEST(SelectCommonBlockSize, LargestCommonExactSizeThatDivides) {
  // 128 is only A's; 64 is listed by both and divides 256.
  EXPECT_EQ(select(256, {backend_accepting("A", {128, 64}), backend_accepting("B", {64, 32})}), 64);
}

TEST(SelectCommonBlockSize, NoCommonSizeNamesTheBlockAndTheBackends) {
  const std::string message =
      select_error(48, {backend_accepting("A", {64}), backend_accepting("B", {MultipleOf{16}})});
  EXPECT_EQ(message.rfind("No common block size for 48.", 0), 0u) << message;
  EXPECT_NE(message.find("A [64]"), std::string::npos) << message;
  EXPECT_NE(message.find("B [MultipleOf(16)]"), std::string::npos) << message;
}

TEST(SelectCommonBlockSize, FlashAttentionLikeAloneAndWithAnExactBackend) {
  const FakeBackend flash = backend_accepting("FA", {MultipleOf{16}});
  EXPECT_EQ(select(16, {flash}), 16);
  EXPECT_EQ(select(32, {flash}), 32);
  const FakeBackend exact = backend_accepting("EXACT", {32, 64});
  EXPECT_EQ(select(64, {flash, exact}), 64);
  EXPECT_EQ(select(96, {flash, exact}), 32);  // 64 does not divide 96
  EXPECT_EQ(select_error(31, {flash, exact}).rfind("No common block size for 31.", 0), 0u);
}

TEST(SelectCommonBlockSize, NoBackendsKeepTheManagerSize) {
  EXPECT_EQ(select(48, {}), 48);
}

TEST(SelectCommonBlockSize, EmptyConstraintsAreAnError) {
  const std::string message =
      select_error(16, {backend_accepting("A", {MultipleOf{16}}), backend_accepting("EMPTY", {})});
  EXPECT_EQ(message.rfind("Kernel block-size constraints must not be empty.", 0), 0u) << message;
  EXPECT_NE(message.find("EMPTY"), std::string::npos) << message;
}

// A backend whose sizes depend on the spec it is asked about: multiples of the head size.
class HeadSizedBackend : public FakeBackend {
 public:
  HeadSizedBackend() : FakeBackend("HEAD_SIZED") {}
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(
      const KVCacheSpec& spec) const override {
    return {spec.head_size};
  }
};

KVCacheConfig config_of(std::vector<KVCacheSpec> specs) {
  KVCacheConfig config;
  for (std::size_t g = 0; g < specs.size(); ++g) {
    config.kv_cache_groups.push_back(
        KVCacheGroupSpec{{"layer" + std::to_string(g)}, std::move(specs[g])});
  }
  return config;
}

std::vector<AttentionGroup> groups_of(std::shared_ptr<const AttentionBackend> backend,
                                      const KVCacheSpec& spec, int group_id) {
  std::vector<AttentionGroup> groups;
  groups.emplace_back(std::move(backend), std::vector<std::string>{"layer"}, spec, group_id);
  return groups;
}

TEST(PrepareKernelBlockSizes, OneEntryPerGroupInGroupOrder) {
  const KVCacheSpec full = KVCacheSpec::full(16, 1, 64, DType::bf16);
  const KVCacheSpec sliding = KVCacheSpec::sliding(64, 1, 32, DType::bf16, 128);
  KVCacheSpec encoder_only = KVCacheSpec::full(1, 1, 64, DType::bf16);
  encoder_only.kind = KVSpecKind::encoder_only;
  const KVCacheSpec unused = KVCacheSpec::full(32, 1, 64, DType::bf16);
  const KVCacheConfig config = config_of({full, encoder_only, sliding, unused});

  std::vector<std::vector<AttentionGroup>> attn_groups;
  attn_groups.push_back(groups_of(testing::fake_backend("FA"), full, 0));
  attn_groups.push_back(groups_of(testing::fake_backend("ENC"), encoder_only, 1));
  // The head-sized backend accepts exactly 32 (the sliding spec's head size), not 64.
  attn_groups.push_back(groups_of(std::make_shared<const HeadSizedBackend>(), sliding, 2));
  attn_groups.emplace_back();  // every layer filtered out

  // Group 1 keeps its entry (vLLM drops it and shifts the rest left); group 3 has no backends.
  EXPECT_EQ(prepare_kernel_block_sizes(config, attn_groups), (std::vector<int>{16, 1, 32, 32}));
}

TEST(PrepareKernelBlockSizes, MissingAttentionGroupListsKeepTheManagerSize) {
  const KVCacheConfig config = config_of(
      {KVCacheSpec::full(16, 1, 64, DType::bf16), KVCacheSpec::full(48, 1, 64, DType::bf16)});
  EXPECT_EQ(prepare_kernel_block_sizes(config, {}), (std::vector<int>{16, 48}));
}

TEST(PrepareKernelBlockSizes, ErrorsPropagate) {
  const KVCacheSpec spec = KVCacheSpec::full(48, 1, 64, DType::bf16);
  std::vector<std::vector<AttentionGroup>> attn_groups;
  testing::FakeCapabilities caps;
  caps.kernel_block_sizes = {64};
  attn_groups.push_back(groups_of(testing::fake_backend("ONLY64", caps), spec, 0));
  EXPECT_THROW(prepare_kernel_block_sizes(config_of({spec}), attn_groups), Error);
}

}  // namespace
}  // namespace attnrt
