// CPU_FLASH against CPU_REFERENCE, its oracle: random mixed batches (prefill chunks, decodes,
// spec-decode rows, idle requests, padded tokens) over every attention type, GQA ratio, layout,
// cache dtype and kernel-block split, on every SIMD target the CPU runs; key splits are forced
// with small split sizes. Plus hand-computed values, FULL-graph replays (SEMANTICS §0), the
// workspace hooks and the input errors.

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "backends/cpu_flash/simd_targets.h"
#include "cpu_flash_batch.h"
#include "cpu_flash_check.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

using flash_test::Batch;
using flash_test::check_scenario;
using flash_test::describe;
using flash_test::expect_close;
using flash_test::random_scenario;
using flash_test::rows_of;
using flash_test::Scenario;
using flash_test::spec_of;
using flash_test::splitting_options;
using flash_test::tolerance;

TEST(CpuFlashBackendTest, RandomBatchesMatchTheReference) {
  const CpuFlashBackend flash(splitting_options());
  std::mt19937 rng(7);
  for (int i = 0; i < 60; ++i) {
    const Scenario s = random_scenario(rng);
    check_scenario(s, 100 + i, flash, describe(s));
  }
}

TEST(CpuFlashBackendTest, EverySimdTargetMatchesTheReference) {
  for (const std::string& target : cpu_flash_simd_targets()) {
    const ScopedSimdTarget pinned(target);
    EXPECT_EQ(cpu_flash_simd_target(), target);
    const CpuFlashBackend flash(splitting_options());
    std::mt19937 rng(11);
    for (int i = 0; i < 12; ++i) {
      const Scenario s = random_scenario(rng);
      check_scenario(s, 200 + i, flash, target + ": " + describe(s));
    }
  }
}

// The head sizes of real models, MLA's 576-wide latent with its 512-wide value included, in
// every cache dtype: a prefill chunk, a decode and a spec-decode row per batch.
TEST(CpuFlashBackendTest, RealHeadSizesMatchTheReference) {
  const CpuFlashBackend flash(splitting_options());
  const std::vector<std::pair<int, int>> sizes = {
      {64, 64}, {80, 80}, {96, 96}, {128, 128}, {256, 256}};
  int seed = 60;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    for (const auto& [head_size, head_size_v] : sizes) {
      Scenario s;
      s.shape = AttentionShape{AttentionType::full, 4, 2, head_size, head_size_v};
      s.dtype = dtype;
      s.requests = {{20, 9}, {45, 1}, {3, 2}};
      check_scenario(s, seed++, flash, fmt::format("head {} {}", head_size, dtype_name(dtype)));
    }
    Scenario mla;
    mla.shape = AttentionShape{AttentionType::mla, 16, 1, 576, 512};
    mla.dtype = dtype;
    mla.requests = {{40, 1}, {8, 5}};
    check_scenario(mla, seed++, flash, fmt::format("MLA 576/512 {}", dtype_name(dtype)));
  }
}

// softmax(scale·q·K)·V by hand: keys (1,0), (0,1), values (1,2), (3,4), q = (√2·ln2, 0) and scale
// 1/√2 give scores (ln 2, 0), weights (2/3, 1/3) and the output (5/3, 8/3). 16 query heads over
// one KV head take the GEMM path, one head the GEMV path; a window of 1 sees only the own key.
TEST(CpuFlashBackendTest, HandComputedSoftmaxOverTwoKeys) {
  for (int heads : {1, 16}) {
    for (AttentionType type : {AttentionType::full, AttentionType::sliding_window}) {
      const AttentionShape shape{type, heads, 1, 2, 2, 1, 0, 0.f};
      Tensor cache = Tensor::zeros(DType::f32, {1, 1, 16, 4});
      const CpuFlashBackend flash;
      std::vector<float> keys = {1, 0, 0, 1}, values = {1, 2, 3, 4};
      const std::vector<std::int64_t> slots = {0, 1};
      flash.write_kv({shape, rows_of(keys, 2, 1, 2), rows_of(values, 2, 1, 2), slots, cache});
      std::vector<float> query;
      for (int h = 0; h < heads; ++h)
        query.insert(query.end(), {std::sqrt(2.f) * std::log(2.f), 0});
      std::vector<float> out(2 * heads, NAN);
      const std::vector<std::int32_t> qsl = {0, 1}, seq_lens = {2}, table = {0};
      AttentionMetadata metadata;
      metadata.common.query_start_loc = metadata.common.query_start_loc_cpu = qsl;
      metadata.common.seq_lens = metadata.common.seq_lens_cpu = seq_lens;
      metadata.common.num_reqs = 1;
      metadata.common.num_actual_tokens = 1;
      metadata.common.block_table = {table.data(), 1, 1, 1};
      flash.forward(
          {shape, rows_of(query, 1, heads, 2), rows_of(out, 1, heads, 2), cache, metadata});
      const bool window = type == AttentionType::sliding_window;
      for (int h = 0; h < heads; ++h) {
        EXPECT_NEAR(out[2 * h], window ? 3.f : 5.f / 3.f, 1e-6) << heads << " heads";
        EXPECT_NEAR(out[2 * h + 1], window ? 4.f : 8.f / 3.f, 1e-6) << heads << " heads";
      }
    }
  }
}

// SEMANTICS §0: a FULL graph captured at padded sizes (frozen num_reqs and num_actual_tokens,
// stale host copies) and replayed with refreshed device arrays gives the eager result, for a
// mixed prefill/decode batch as ALWAYS promises; padded rows are zero.
TEST(CpuFlashBackendTest, FullGraphReplayEqualsEagerForMixedBatches) {
  const CpuFlashBackend flash(splitting_options());
  Scenario s;
  s.shape = AttentionShape{AttentionType::full, 8, 2, 32, 32};
  s.dtype = DType::bf16;
  s.requests = {{40, 12}, {70, 1}, {0, 20}, {129, 1}};
  s.padded_tokens = 6;
  Batch batch(s, 5, flash);
  const auto builder = flash.create_builder(spec_of(s), {"layer0"}, EngineConfig{}, Device::cpu());
  const int reqs = batch.num_reqs() + 2;
  const int cols = batch.cols();
  // Persistent arrays, first holding the capture's dummy decodes.
  std::vector<std::int32_t> qsl(reqs + 1), seq_lens(reqs, 1), table(reqs * cols, 0);
  std::vector<std::int32_t> stale_qsl(reqs + 1), stale_seq_lens(reqs, 1);
  std::iota(qsl.begin(), qsl.end(), 0);
  std::iota(stale_qsl.begin(), stale_qsl.end(), 0);
  std::vector<std::int64_t> slots(batch.num_rows(), PAD_SLOT_ID);
  CommonAttentionMetadata capture;
  capture.query_start_loc = qsl;
  capture.query_start_loc_cpu = stale_qsl;
  capture.seq_lens = seq_lens;
  capture.seq_lens_cpu = stale_seq_lens;
  capture.num_reqs = reqs;
  capture.num_actual_tokens = batch.num_rows();
  capture.max_query_len = capture.max_seq_len = 1;
  capture.block_table = {table.data(), reqs, cols, cols};
  capture.slot_mapping = slots;
  const std::unique_ptr<AttentionMetadata> graph =
      builder->build_for_cudagraph_capture(capture).clone();

  CommonAttentionMetadata eager_common = batch.common();
  eager_common.num_actual_tokens = batch.num_tokens();
  const auto [expected, eager] = batch.run(builder->build(0, eager_common));
  // Replay: refresh the device arrays in place; padded requests are empty, padded rows idle.
  std::copy(batch.query_start_loc.begin(), batch.query_start_loc.end(), qsl.begin());
  std::fill(qsl.begin() + batch.num_reqs() + 1, qsl.end(), batch.num_tokens());
  std::copy(batch.seq_lens.begin(), batch.seq_lens.end(), seq_lens.begin());
  std::fill(seq_lens.begin() + batch.num_reqs(), seq_lens.end(), 0);
  std::copy(batch.block_table.begin(), batch.block_table.end(), table.begin());
  const std::vector<float> replay = batch.flash_forward(*graph);
  const std::size_t real = eager.size() / batch.num_rows() * batch.num_tokens();
  EXPECT_TRUE(std::equal(replay.begin(), replay.begin() + real, eager.begin()));
  EXPECT_TRUE(std::all_of(replay.begin() + real, replay.end(), [](float x) { return x == 0.f; }));
  EXPECT_TRUE(
      std::all_of(eager.begin() + real, eager.end(), [](float x) { return std::isnan(x); }));
  expect_close(std::vector<float>(replay.begin(), replay.begin() + real),
               std::vector<float>(expected.begin(), expected.begin() + real),
               tolerance(s.dtype, flash), "replay vs reference");
}

TEST(CpuFlashBackendTest, DeclaresWhatItMeets) {
  const AttentionBackendPtr backend = make_cpu_flash_backend();
  EXPECT_EQ(backend->name(), "CPU_FLASH");
  for (KVSpecKind kind : {KVSpecKind::full, KVSpecKind::sliding_window, KVSpecKind::chunked_local,
                          KVSpecKind::mla, KVSpecKind::cross}) {
    EXPECT_TRUE(backend->supports_spec_kind(kind)) << attention_type_name(kind);
  }
  EXPECT_FALSE(backend->supports_spec_kind(KVSpecKind::encoder_only));
  const KVCacheSpec spec = KVCacheSpec::full(16, 2, 64, DType::bf16);
  EXPECT_EQ(backend->get_supported_kernel_block_sizes(spec),
            (std::vector<KernelBlockSize>{MultipleOf{1}}));
  EXPECT_EQ(backend->supported_kv_cache_layouts().size(), kAllLayouts.size());
  EXPECT_EQ(backend->supported_kv_cache_layouts().front(), KVCacheLayout::LBNHC);
  EXPECT_TRUE(backend->supports_device_cpu_query_lens_mismatch());
  EXPECT_FALSE(backend->supports_batch_invariance());
  const EngineConfig config;
  const auto builder = backend->create_builder(spec, {"layer0"}, config, Device::cpu());
  EXPECT_EQ(builder->get_cudagraph_support(config, spec), AttentionCGSupport::ALWAYS);
  EXPECT_EQ(builder->get_varlen_cudagraph_max_query_len(config, spec), std::nullopt);
  EXPECT_THROW(backend->create_builder(KVCacheSpec::full(16, 2, 64, DType::bf16), {"l"}, config,
                                       Device::cuda(0)),
               Error);
}

// The tiles index kMaxRows (128) rows of a head with int offsets: INT_MAX / 256 = 8 388 607 is
// the widest head the builder takes; sizes are checked before any workspace exists.
TEST(CpuFlashBackendTest, HeadsPastTheTilesIntOffsetsAreRefusedWhenBuildersAreMade) {
  const AttentionBackendPtr backend = make_cpu_flash_backend();
  const EngineConfig config;
  const KVCacheSpec widest = KVCacheSpec::full(16, 1, 8388607, DType::bf16);
  EXPECT_NE(backend->create_builder(widest, {"l0"}, config, Device::cpu()), nullptr);
  const KVCacheSpec wider = KVCacheSpec::full(16, 1, 8388608, DType::bf16);
  EXPECT_EQ(error_of([&] {
              backend->create_builder(wider, {"l0", "l1"}, config, Device::cpu());
            }),
            "layer l0 and 1 more: CPU_FLASH runs heads of at most 8388607 entries, not head size "
            "8388608; choose CPU_REFERENCE for these layers");
  CpuFlashOptions options;
  options.num_threads = 2147483647;  // ~13 GB of tiles per thread × 2^31 threads
  const std::string overflow = error_of([&] {
    make_cpu_flash_backend(options)->create_builder(widest, {"l0"}, config, Device::cpu());
  });
  EXPECT_NE(overflow.find("CPU_FLASH workspace bytes"), std::string::npos) << overflow;
}

const std::shared_ptr<Buffer>& workspace_of(const AttentionMetadata& metadata) {
  return dynamic_cast<const CpuFlashMetadata&>(metadata).workspace;
}

// SEMANTICS §7.7 phase 3: the first builder provides one workspace sized for every layer of the
// config; a later builder adopts it only if it is large enough for its own layers.
TEST(CpuFlashBackendTest, WorkspaceIsSharedWhenLargeEnough) {
  EngineConfig config;
  const auto layer = [](std::string name, AttentionType type, int heads, int kv_heads, int size,
                        int size_v) {
    LayerConfig l;
    l.name = std::move(name);
    l.type = type;
    l.num_heads = heads;
    l.num_kv_heads = kv_heads;
    l.head_size = size;
    l.head_size_v = size_v;
    return l;
  };
  config.model.layers = {layer("full", AttentionType::full, 8, 2, 64, 64),
                         layer("mla", AttentionType::mla, 16, 1, 576, 512)};
  const CpuFlashBackend flash;
  const KVCacheSpec full = KVCacheSpec::full(16, 2, 64, DType::bf16);
  const KVCacheSpec mla = KVCacheSpec::mla(16, 576, DType::bf16);
  auto first = flash.create_builder(full, {"full"}, config, Device::cpu());
  auto second = flash.create_builder(mla, {"mla"}, config, Device::cpu());
  const std::shared_ptr<Buffer> shared = first->provide_workspace(config);
  EXPECT_TRUE(second->accepts_workspace());
  second->set_workspace_buffer(shared);
  const CommonAttentionMetadata common;
  EXPECT_EQ(workspace_of(second->build(0, common)), shared);
  EXPECT_EQ(workspace_of(first->build(0, common)), shared);
  EXPECT_EQ(workspace_of(first->build(0, common)), shared);  // no new buffer per step

  const EngineConfig small;  // no layers: the provider sizes for its own group only
  auto provider = flash.create_builder(full, {"full"}, small, Device::cpu());
  auto consumer = flash.create_builder(mla, {"mla"}, small, Device::cpu());
  const std::shared_ptr<Buffer> too_small = provider->provide_workspace(small);
  consumer->set_workspace_buffer(too_small);
  const std::shared_ptr<Buffer> own = workspace_of(consumer->build(0, common));
  EXPECT_NE(own, too_small);
  EXPECT_GE(own->size(), dynamic_cast<CpuFlashMetadataBuilder&>(*consumer).workspace_bytes());
}

// Metadata from another builder carries no workspace: the call allocates its own and gives the
// same result.
TEST(CpuFlashBackendTest, MetadataWithoutWorkspaceGivesTheSameResult) {
  const CpuFlashBackend flash(splitting_options());
  Scenario s;
  s.shape = AttentionShape{AttentionType::chunked_local, 6, 3, 16, 16, 0, 8};
  s.requests = {{30, 5}, {9, 1}};
  Batch batch(s, 9, flash);
  const auto builder = flash.create_builder(spec_of(s), {"layer0"}, EngineConfig{}, Device::cpu());
  const auto [expected, actual] = batch.run(builder->build(0, batch.common()));
  AttentionMetadata plain;
  plain.common = batch.common();
  EXPECT_EQ(batch.flash_forward(plain), actual);
  expect_close(actual, expected, tolerance(s.dtype, flash), "chunked local");
}

// Special values round exactly as store_from_float does: ties, overflow, NaN, subnormals.
TEST(CpuFlashBackendTest, WriteKvRoundsLikeTheReferenceAndSkipsPadSlots) {
  const std::vector<float> specials = {
      0.f,   -0.f,    1.f + 0x1p-8f, 1.f + 3 * 0x1p-8f, 65520.f, 65519.f,   448.f,    464.f,
      1e30f, -1e-30f, 1e-8f,         INFINITY,          NAN,     -INFINITY, 0x1p-10f, 3.1f};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3}) {
    const AttentionShape shape{AttentionType::full, 1, 1, 8, 8};
    Tensor reference_cache = Tensor::zeros(dtype, {2, 1, 4, 16});
    Tensor flash_cache = Tensor::zeros(dtype, {2, 1, 4, 16});
    std::vector<float> keys(specials.begin(), specials.end());
    keys.insert(keys.end(), specials.rbegin(), specials.rend());
    std::vector<float> values(keys.rbegin(), keys.rend());
    const std::vector<std::int64_t> slots = {5, PAD_SLOT_ID, 2, 7};
    keys.resize(4 * 8, 0.25f);
    values.resize(4 * 8, -0.5f);
    const KVWriteArgs args{shape, rows_of(keys, 4, 1, 8), rows_of(values, 4, 1, 8), slots,
                           reference_cache};
    CpuReferenceBackend().write_kv(args);
    CpuFlashBackend().write_kv({shape, args.key, args.value, slots, flash_cache});
    EXPECT_EQ(std::memcmp(reference_cache.data(), flash_cache.data(),
                          reference_cache.numel() * dtype_size(dtype)),
              0)
        << dtype_name(dtype);
  }
}

TEST(CpuFlashBackendTest, RejectsBadInputsBeforeWriting) {
  const CpuFlashBackend flash;
  const AttentionShape shape{AttentionType::full, 2, 1, 4, 4};
  Tensor cache = Tensor::zeros(DType::bf16, {2, 1, 4, 8});
  std::vector<float> keys(8, 1.f), values(8, 2.f);
  const std::vector<std::int64_t> bad = {3, 8};
  EXPECT_EQ(error_of([&] {
              flash.write_kv({shape, rows_of(keys, 2, 1, 4), rows_of(values, 2, 1, 4), bad, cache});
            }).find("CPU_FLASH write_kv: token 1 has slot 8, outside the 8 slots"),
            0u);
  EXPECT_TRUE(
      std::all_of(cache.data(), cache.data() + 128, [](std::byte b) { return b == std::byte{0}; }));

  std::vector<float> query(8, 0.f), out(8, 0.f);
  const std::vector<std::int32_t> qsl = {0, 1}, seq_lens = {5}, table = {0, 2};
  AttentionMetadata metadata;
  metadata.common.query_start_loc = qsl;
  metadata.common.seq_lens = seq_lens;
  metadata.common.num_reqs = 1;
  metadata.common.block_table = {table.data(), 1, 2, 2};
  const auto run = [&](const Tensor& view) {
    flash.forward({shape, rows_of(query, 1, 2, 4), rows_of(out, 1, 2, 4), view, metadata});
  };
  EXPECT_NE(error_of([&] { run(cache); }).find("block-table entry 1 is kernel block 2, outside"),
            std::string::npos);
  const Tensor strided(cache.buffer(), DType::bf16, {2, 1, 4, 4}, {32, 32, 8, 2});
  EXPECT_NE(error_of([&] { run(strided); }).find("content axis has stride 2"), std::string::npos);
  const AttentionShape encoder{AttentionType::encoder_only, 2, 1, 4, 4};
  EXPECT_NE(
      error_of([&] {
        flash.forward({encoder, rows_of(query, 1, 2, 4), rows_of(out, 1, 2, 4), cache, metadata});
      }).find("encoder_only"),
      std::string::npos);
}

}  // namespace
}  // namespace attnrt
