// CPU_REFERENCE against dense, unpaged attention (dense_attention.h): mixed batches over caches
// planned and allocated by the real kv/ code (paged_attention_batch.h), in every layout, cache
// dtype and kernel-block split, plus hand-computed values, capabilities and input errors.

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "paged_attention_batch.h"

namespace attnrt {
namespace {

using testing::attention_shape;
using testing::error_of;
using testing::expect_close;
using testing::mixed_batch_options;
using testing::PagedBatch;
using testing::PagedBatchOptions;
using testing::rows_of;

// Against the oracle on the K/V as rounded into the cache, only fp32 summation order differs from
// its double sums (observed ≤ 2e-7): a paging or masking bug shows as an O(1) error.
constexpr double kPagingTolerance = 1e-5;

// Against the oracle on the unrounded K/V, rounding into the cache adds up to half a unit roundoff
// (f16 2^-11 ≈ 5e-4, bf16 2^-8 ≈ 4e-3) to each K and V entry in [-1, 1]; outputs are convex
// combinations of V and scores move by ~scale·|q|·|Δk|, so errors stay about one roundoff
// (observed: f16 2.3e-4, bf16 2.1e-3); the bounds leave a 10x margin.
double rounding_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 2e-3;
    case DType::bf16:
      return 2e-2;
    default:
      return kPagingTolerance;
  }
}

void check_against_dense(const PagedBatchOptions& options, unsigned seed, const std::string& what) {
  SCOPED_TRACE(what);
  PagedBatch batch(make_cpu_reference_backend(), options, seed);
  const std::vector<float> output = batch.run_eager();
  expect_close(output, batch.dense(/*rounded=*/true), kPagingTolerance, "vs cache-rounded K/V");
  if (options.dtype != DType::fp8_e4m3) {
    expect_close(output, batch.dense(/*rounded=*/false), rounding_tolerance(options.dtype),
                 "vs exact K/V");
  }
}

TEST(CpuReferenceBackendTest, DeclaresItsCapabilities) {
  const AttentionBackendPtr backend = make_cpu_reference_backend();
  EXPECT_EQ(backend->name(), "CPU_REFERENCE");
  for (KVSpecKind kind : {KVSpecKind::full, KVSpecKind::sliding_window, KVSpecKind::chunked_local,
                          KVSpecKind::mla, KVSpecKind::cross}) {
    EXPECT_TRUE(backend->supports_spec_kind(kind)) << attention_type_name(kind);
  }
  EXPECT_FALSE(backend->supports_spec_kind(KVSpecKind::encoder_only));
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 16, DType::f32);
  EXPECT_EQ(backend->get_supported_kernel_block_sizes(spec),
            (std::vector<KernelBlockSize>{MultipleOf{1}}));
  EXPECT_TRUE(backend->supported_kv_cache_layouts().empty());
  EXPECT_TRUE(backend->supports_device_cpu_query_lens_mismatch());
  EXPECT_TRUE(backend->supports_batch_invariance());
  EXPECT_TRUE(backend->executable());

  const EngineConfig config;
  const auto builder = backend->create_builder(spec, {"layer0"}, config, Device::cpu());
  EXPECT_EQ(builder->get_cudagraph_support(config, spec), AttentionCGSupport::ALWAYS);
  EXPECT_EQ(builder->get_varlen_cudagraph_max_query_len(config, spec), std::nullopt);
  EXPECT_EQ(builder->layer_names(), std::vector<std::string>{"layer0"});
}

// One KV head of width 1, scale 1: keys 0 and ln 3 give softmax weights 1/4 and 3/4.
TEST(CpuReferenceBackendTest, HandComputedSoftmaxOverTwoKeys) {
  const CpuReferenceBackend backend;
  AttentionShape shape = attention_shape(AttentionType::full, 1, 1, 1, 1);
  shape.scale = 1.f;
  const Tensor cache = Tensor::zeros(DType::f32, {2, 1, 4, 2});  // 2 kernel blocks of 4 tokens
  std::vector<float> keys = {0.f, std::log(3.f)}, values = {4.f, 8.f};
  const std::vector<std::int64_t> slots = {4, 5};  // block 1, offsets 0 and 1
  backend.write_kv({shape, rows_of(keys, 2, 1, 1), rows_of(values, 2, 1, 1), slots, cache});
  EXPECT_EQ(cache.get({1, 0, 1, 0}), std::log(3.f));
  EXPECT_EQ(cache.get({1, 0, 1, 1}), 8.f);
  EXPECT_EQ(cache.get({0, 0, 1, 1}), 0.f);

  const std::vector<std::int32_t> table = {1};
  std::vector<float> query = {1.f, 1.f}, output(2);
  // query_start_loc, seq_lens: a decode at position 1, then a 2-token prefill.
  auto run = [&](std::vector<std::int32_t> qsl, std::vector<std::int32_t> seq_lens, bool causal) {
    AttentionMetadata metadata;
    metadata.common.query_start_loc = qsl;
    metadata.common.seq_lens = seq_lens;
    metadata.common.num_reqs = 1;
    metadata.common.num_actual_tokens = qsl.back();
    metadata.common.block_table = {table.data(), 1, 1, 1};
    metadata.common.causal = causal;
    std::fill(output.begin(), output.end(), -1.f);
    backend.forward({shape, rows_of(query, 2, 1, 1), rows_of(output, 2, 1, 1), cache, metadata});
    return output;
  };
  EXPECT_NEAR(run({0, 1}, {2}, true)[0], 1.f * 4 / 4 + 3.f * 8 / 4, 1e-6);  // 7
  EXPECT_EQ(run({0, 1}, {2}, true)[1], -1.f);  // past num_actual_tokens: untouched
  std::vector<float> prefill = run({0, 2}, {2}, true);
  EXPECT_NEAR(prefill[0], 4.f, 1e-6);  // position 0 sees only itself
  EXPECT_NEAR(prefill[1], 7.f, 1e-6);
  prefill = run({0, 2}, {2}, false);  // bidirectional: position 0 sees both
  EXPECT_NEAR(prefill[0], 7.f, 1e-6);
  shape.type = AttentionType::sliding_window;
  shape.sliding_window = 1;  // the window holds the query's own token only
  EXPECT_NEAR(run({0, 1}, {2}, true)[0], 8.f, 1e-6);

  // Scores near 1000 overflow exp() unless the maximum is subtracted first.
  shape.type = AttentionType::full;
  keys = {1000.f, 1000.f + std::log(3.f)};
  backend.write_kv({shape, rows_of(keys, 2, 1, 1), rows_of(values, 2, 1, 1), slots, cache});
  EXPECT_NEAR(run({0, 1}, {2}, true)[0], 7.f, 1e-3);
}

TEST(CpuReferenceBackendTest, MixedPrefillAndDecodeMatchDenseForGqaRatios) {
  for (int ratio : {1, 4, 8}) {
    PagedBatchOptions options = mixed_batch_options(2 * ratio, 2);
    if (ratio == 4) options.shape.scale = 0.3f;
    check_against_dense(options, 10 + ratio, "GQA ratio " + std::to_string(ratio));
  }
}

TEST(CpuReferenceBackendTest, SlidingWindowsSmallerAndLargerThanABlock) {
  for (int window : {5, 40}) {
    PagedBatchOptions options = mixed_batch_options(4, 2);
    options.shape.type = AttentionType::sliding_window;
    options.shape.sliding_window = window;
    check_against_dense(options, 20 + window, "window " + std::to_string(window));
  }
}

TEST(CpuReferenceBackendTest, ChunkedLocalAttentionStaysInItsChunk) {
  for (int chunk : {8, 24}) {
    PagedBatchOptions options = mixed_batch_options(4, 2);
    options.shape.type = AttentionType::chunked_local;
    options.shape.attention_chunk_size = chunk;
    check_against_dense(options, 30 + chunk, "chunk " + std::to_string(chunk));
  }
}

TEST(CpuReferenceBackendTest, CrossAttentionReadsTheEncoderOutputWrittenOnce) {
  for (bool encoder_lens_in_seq_lens : {false, true}) {
    PagedBatchOptions options;
    options.shape = attention_shape(AttentionType::cross, 4, 2, 16, 8);
    options.requests = {{24, 1}, {7, 1}, {40, 3}, {1, 1}, {17, 2}};  // encoder length, queries
    options.encoder_lens_in_seq_lens = encoder_lens_in_seq_lens;
    check_against_dense(options, 40, encoder_lens_in_seq_lens ? "seq_lens" : "encoder_seq_lens");
  }
}

TEST(CpuReferenceBackendTest, MlaUsesTheLatentAsKeyAndItsPrefixAsValue) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    PagedBatchOptions options = mixed_batch_options(4, 1);
    options.shape = attention_shape(AttentionType::mla, 4, 1, 24, 16);
    options.dtype = dtype;
    check_against_dense(options, 50, std::string(dtype_name(dtype)));
  }
}

TEST(CpuReferenceBackendTest, EveryLayoutMatchesDense) {
  for (KVCacheLayout layout : kAllLayouts) {
    PagedBatchOptions options = mixed_batch_options(4, 2);
    options.layout = layout;
    options.num_layers = 2;
    check_against_dense(options, 60, std::string(layout_name(layout)));
  }
}

TEST(CpuReferenceBackendTest, EveryCacheDtypeMatchesDense) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    PagedBatchOptions options = mixed_batch_options(8, 2);
    options.dtype = dtype;
    check_against_dense(options, 70, std::string(dtype_name(dtype)));
  }
}

// Manager blocks of 32 split into kernel blocks of 16. Block-outermost layouts with 2 layers keep
// a row of 4 kernel pages per block: spaced ids and translated slots.
TEST(CpuReferenceBackendTest, SplitKernelBlocksMatchDense) {
  for (KVCacheLayout layout : kAllLayouts) {
    PagedBatchOptions options = mixed_batch_options(4, 2);
    if (layout == KVCacheLayout::LHBNC || layout == KVCacheLayout::BHLNC) {
      // A head per page: 1 head.
      options.shape = attention_shape(AttentionType::full, 4, 1, 16, 16);
    }
    options.layout = layout;
    options.num_layers = 2;
    options.block_size = 32;
    options.kernel_block_size = 16;
    const std::string name(layout_name(layout));
    PagedBatch probe(make_cpu_reference_backend(), options, 80);
    EXPECT_EQ(probe.geometry().ratio, 2) << name;
    EXPECT_EQ(probe.geometry().needs_slot_translation(), is_block_outermost(layout)) << name;
    check_against_dense(options, 80, name);
  }
}

TEST(CpuReferenceBackendTest, RefusesWhatItCannotServe) {
  const CpuReferenceBackend backend;
  const EngineConfig config;
  KVCacheSpec encoder_only = KVCacheSpec::full(16, 2, 16, DType::f32);
  encoder_only.kind = KVSpecKind::encoder_only;
  const std::string encoder =
      error_of([&] { backend.create_builder(encoder_only, {"enc0"}, config, Device::cpu()); });
  EXPECT_NE(encoder.find("encoder_only attention (layers enc0)"), std::string::npos) << encoder;

  KVCacheSpec compressed = KVCacheSpec::full(16, 2, 16, DType::f32);
  compressed.tokens_per_state = 4;
  const std::string states =
      error_of([&] { backend.create_builder(compressed, {"layer3"}, config, Device::cpu()); });
  EXPECT_NE(states.find("packs 4 tokens per state (layers layer3)"), std::string::npos) << states;

  PagedBatch batch(make_cpu_reference_backend(), mixed_batch_options(4, 2), 120);
  AttentionShape encoder_shape = batch.shape();
  encoder_shape.type = AttentionType::encoder_only;
  std::vector<float> query = batch.query, output(batch.query.size());
  const AttentionMetadata& metadata = batch.builder().build(0, batch.eager_metadata());
  const int n = batch.num_tokens();
  const std::string forward = error_of([&] {
    backend.forward({encoder_shape, rows_of(query, n, 4, 16), rows_of(output, n, 4, 16),
                     batch.cache(), metadata});
  });
  EXPECT_NE(forward.find("encoder_only attention keeps no KV cache"), std::string::npos) << forward;
}

TEST(CpuReferenceBackendTest, ForwardRejectsMetadataOutsideTheCache) {
  PagedBatch batch(make_cpu_reference_backend(), mixed_batch_options(4, 2), 130);
  batch.write_step_kv();
  auto forward = [&] {
    batch.forward(batch.builder().build(0, batch.eager_metadata()), batch.query,
                  batch.num_tokens());
  };
  const std::int32_t block = batch.block_table[1];
  batch.block_table[1] = 100000;  // request 0 (20 tokens), its second kernel block
  std::string error = error_of(forward);
  EXPECT_NE(error.find("request 0 block-table entry 1 is kernel block 100000"), std::string::npos)
      << error;
  batch.block_table[1] = block;
  batch.seq_lens[2] = 6;  // request 2 has 7 query tokens
  error = error_of(forward);
  EXPECT_NE(error.find("request 2 has seq_len 6 but 7 query tokens"), std::string::npos) << error;
}

}  // namespace
}  // namespace attnrt
