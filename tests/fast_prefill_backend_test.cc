// The KV-sharing fast-prefill wrapper backend (SEMANTICS §6.2): the metadata rewrite with its
// worked example, and the wrapper's name, grouping key, forwarded capabilities and builder.

#include "attnrt/backends/fast_prefill_backend.h"

#include <gtest/gtest.h>

#include "attnrt/core/error.h"
#include "fake_attention_backend.h"

namespace attnrt {
namespace {

using I32 = std::vector<std::int32_t>;

template <typename T>
std::vector<T> values(std::span<const T> span) {
  return {span.begin(), span.end()};
}

// §6.2's example: 3 prefill requests of 15, 5 and 8 tokens; logits rows 14, 18, 19, 27 (padded
// to 6 for a graph), at most 2 per request.
struct PrefillStep {
  PrefillStep() {
    common.query_start_loc = query_start_loc;
    common.query_start_loc_cpu = query_start_loc;
    common.seq_lens = seq_lens;
    common.seq_lens_cpu = seq_lens;
    common.num_reqs = 3;
    common.num_actual_tokens = 28;
    common.max_query_len = 15;
    common.max_seq_len = 41;
    common.slot_mapping = slot_mapping;
    common.positions = slot_mapping;
    common.causal = false;
    common.logits_indices_padded = logits;
    common.num_logits_indices = 4;
    common.max_logits_per_req = 2;
  }

  I32 query_start_loc = {0, 15, 20, 28};
  I32 seq_lens = {41, 31, 40};
  I32 logits = {14, 18, 19, 27, 27, 27};
  std::vector<std::int64_t> slot_mapping = std::vector<std::int64_t>(28, 7);
  CommonAttentionMetadata common;
};

void expect_logits_rows(const CommonAttentionMetadata& fast, const PrefillStep& step) {
  // Requests own logits rows [0], [1, 2], [3].
  EXPECT_EQ(values(fast.query_start_loc), (I32{0, 1, 3, 4}));
  EXPECT_EQ(values(fast.query_start_loc_cpu), (I32{0, 1, 3, 4}));
  EXPECT_EQ(fast.num_reqs, 3);
  EXPECT_EQ(fast.num_actual_tokens, 4);
  EXPECT_EQ(fast.max_query_len, 2);
  EXPECT_EQ(fast.max_seq_len, 41);
  EXPECT_TRUE(fast.causal);
  EXPECT_EQ(fast.seq_lens.data(), step.seq_lens.data());
  EXPECT_EQ(fast.slot_mapping.data(), step.slot_mapping.data());  // not sliced
  EXPECT_TRUE(fast.positions.empty());
  EXPECT_EQ(fast.logits_indices_padded.data(), step.logits.data());
  EXPECT_EQ(fast.num_logits_indices, 4);
}

TEST(FastPrefillMetadata, WorkedExampleOfTheSpec) {
  const PrefillStep step;
  I32 out(4, -1);
  expect_logits_rows(make_kv_sharing_fast_prefill_common_attn_metadata(step.common, out), step);
}

TEST(FastPrefillMetadata, PureDecodeIsUnchanged) {
  PrefillStep step;
  step.common.max_query_len = 1;
  step.common.num_logits_indices.reset();  // not needed for decode
  I32 out(4, -1);
  const CommonAttentionMetadata same =
      make_kv_sharing_fast_prefill_common_attn_metadata(step.common, out);
  EXPECT_EQ(same.query_start_loc.data(), step.query_start_loc.data());
  EXPECT_EQ(same.num_actual_tokens, 28);
  EXPECT_FALSE(same.causal);
  EXPECT_EQ(out, (I32{-1, -1, -1, -1}));
}

TEST(FastPrefillMetadata, MissingOrStrayLogitsAreErrors) {
  I32 out(4);
  PrefillStep no_count;
  no_count.common.max_logits_per_req.reset();
  EXPECT_THROW(make_kv_sharing_fast_prefill_common_attn_metadata(no_count.common, out), Error);
  PrefillStep stray;
  stray.logits[3] = 28;  // one past the last query token
  try {
    make_kv_sharing_fast_prefill_common_attn_metadata(stray.common, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logits index 28"), std::string::npos) << e.what();
  }
}

TEST(FastPrefillBackendTest, NameKeyAndCapabilitiesComeFromTheWrappedBackend) {
  testing::FakeCapabilities caps = testing::cg_caps(AttentionCGSupport::UNIFORM_BATCH, 4);
  caps.kernel_block_sizes = {32, MultipleOf{16}};
  caps.query_lens_mismatch = false;
  caps.batch_invariance = true;
  const auto wrapped = testing::fake_backend("FLASH_ATTN", caps);
  const FastPrefillBackend one(wrapped);
  const FastPrefillBackend two(wrapped);
  EXPECT_EQ(one.name(), "FastPrefillFLASH_ATTN");
  EXPECT_EQ(one.group_key(), two.group_key());
  EXPECT_NE(one.group_key(), wrapped->group_key());
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 64, DType::bf16);
  EXPECT_EQ(one.get_supported_kernel_block_sizes(spec),
            (std::vector<KernelBlockSize>{32, MultipleOf{16}}));
  EXPECT_FALSE(one.supports_device_cpu_query_lens_mismatch());
  EXPECT_TRUE(one.supports_batch_invariance());
  EXPECT_EQ(one.wrapped(), wrapped);
  EXPECT_THROW(FastPrefillBackend(nullptr), Error);
}

TEST(FastPrefillBackendTest, BuilderRewritesTheStepForTheWrappedBuilder) {
  const auto wrapped =
      testing::fake_backend("FLASH_ATTN", testing::cg_caps(AttentionCGSupport::UNIFORM_BATCH, 4));
  const auto backend = create_fast_prefill_custom_backend(wrapped);
  EngineConfig config;
  const KVCacheSpec spec = KVCacheSpec::full(16, 1, 64, DType::bf16);
  auto builder = backend->create_builder(spec, {"l2", "l3"}, config, Device::cpu());
  EXPECT_EQ(builder->get_cudagraph_support(config, spec), AttentionCGSupport::UNIFORM_BATCH);
  EXPECT_EQ(builder->get_varlen_cudagraph_max_query_len(config, spec), 4);

  auto& fast = dynamic_cast<FastPrefillMetadataBuilder&>(*builder);
  auto& inner = testing::fake_builder(fast.wrapped());
  EXPECT_EQ(inner.layer_names(), (std::vector<std::string>{"l2", "l3"}));
  const PrefillStep step;
  const AttentionMetadata& metadata = builder->build(0, step.common);
  EXPECT_EQ(inner.num_builds, 1);
  expect_logits_rows(metadata.common, step);
  // Capture goes through the rewrite too (vLLM's capture calls the overridden build).
  const AttentionMetadata& captured = builder->build_for_cudagraph_capture(step.common);
  EXPECT_EQ(inner.num_capture_builds, 1);
  expect_logits_rows(captured.common, step);
}

}  // namespace
}  // namespace attnrt
