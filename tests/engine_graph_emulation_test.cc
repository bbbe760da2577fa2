// CUDA-graph emulation earns its keep (SEMANTICS §0): a backend that declares FULL-graph support
// it does not have produces wrong results once its metadata is replayed with frozen host values,
// while the real backends match eager execution in every mode; and padded rows never write the
// KV cache.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "attnrt/core/error.h"
#include "attnrt/engine/engine.h"
#include "engine/captured_graphs.h"
#include "support/engine_workload.h"
#include "tiny_model_rig.h"

namespace attnrt {
namespace {

// Metadata with a host-side "plan": the sequence lengths copied when it was built, as backends
// that plan on the host do (FlashInfer's plan()). A graph's clone keeps the capture's plan.
struct PlannedMetadata : AttentionMetadata {
  std::unique_ptr<AttentionMetadata> clone() const override {
    return std::make_unique<PlannedMetadata>(*this);
  }
  std::vector<std::int32_t> planned_seq_lens;
};

// Declares ALWAYS, like CPU_REFERENCE, but its kernel trusts the plan over the device arrays.
class PlannedSeqLensBuilder : public CpuReferenceMetadataBuilder {
 public:
  using CpuReferenceMetadataBuilder::CpuReferenceMetadataBuilder;
  const AttentionMetadata& build(int, const CommonAttentionMetadata& common, bool) override {
    metadata_.common = common;
    metadata_.planned_seq_lens.assign(common.seq_lens.begin(), common.seq_lens.end());
    return metadata_;
  }

 private:
  PlannedMetadata metadata_;
};

class PlannedSeqLensBackend : public CpuReferenceBackend {
 public:
  std::string name() const override { return "PLANNED_SEQ_LENS"; }
  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& spec,
                                                           std::vector<std::string> layers,
                                                           const EngineConfig& config,
                                                           Device device) const override {
    (void)config;
    return std::make_unique<PlannedSeqLensBuilder>(spec, std::move(layers), device);
  }
  void forward(const AttentionForwardArgs& args) const override {
    const auto& planned = dynamic_cast<const PlannedMetadata&>(args.metadata);
    AttentionMetadata metadata = planned;
    metadata.common.seq_lens = planned.planned_seq_lens;
    CpuReferenceBackend::forward({args.shape, args.query, args.output, args.kv_cache, metadata});
  }
};

EngineConfig engine_config(const std::string& mode, bool fast_prefill) {
  EngineConfig config = tiny_model::yoco_config(DType::f32, fast_prefill);
  config.compilation.cudagraph_mode = CUDAGraphMode::parse(mode);
  config.compilation.capture_sizes = {1, 2, 4, 8, 16, 32};
  config.cache.memory = 256 << 10;
  return config;
}

struct RunResult {
  std::vector<std::vector<std::int32_t>> outputs;
  std::vector<std::vector<float>> logits;
  EngineStats stats;
  std::vector<std::byte> kv_cache;
  std::int64_t null_block_nonzero_bytes = 0;
};

// Bytes of manager block 0 (never handed out) that are not zero, over every layer's view.
std::int64_t null_block_nonzero_bytes(const Engine& engine) {
  std::int64_t nonzero = 0;
  for (const auto& [layer, geometry] : engine.kv_cache().geometry) {  // owning layers only
    const Tensor& view = engine.kv_cache().views.at(layer);
    const std::int64_t element = static_cast<std::int64_t>(dtype_size(view.dtype()));
    const int kernel_blocks_per_block = geometry.ratio;
    for (int b = 0; b < kernel_blocks_per_block; ++b) {
      for (std::int64_t h = 0; h < view.size(1); ++h) {
        for (std::int64_t n = 0; n < view.size(2); ++n) {
          const std::byte* row =
              view.data() +
              (b * view.stride(0) + h * view.stride(1) + n * view.stride(2)) * element;
          for (std::int64_t i = 0; i < view.size(3) * element; ++i)
            nonzero += row[i] != std::byte{0};
        }
      }
    }
  }
  return nonzero;
}

RunResult run_engine(const std::string& mode, bool fast_prefill, EngineOptions options = {}) {
  options.seed = 9;
  options.record_logits = true;
  // The batch-invariant oracle unless a test names a backend: exact comparisons hold.
  if (!options.backend) options.backend = "CPU_REFERENCE";
  Engine engine(engine_config(mode, fast_prefill), options);
  WorkloadOptions workload;
  workload.num_requests = 7;
  workload.min_prompt_len = 2;
  workload.max_prompt_len = 30;
  workload.min_output_len = 3;
  workload.max_output_len = 9;
  workload.seed = 4;
  submit(engine, make_workload(workload, engine.model().vocab_size(), 64));
  engine.run();
  RunResult result;
  for (const RequestRecord& request : engine.requests()) {
    result.outputs.push_back(request.output);
    result.logits.push_back(request.logits);
  }
  result.stats = engine.stats();
  const Buffer& backing = *engine.kv_cache().backing;
  result.kv_cache.assign(backing.data(), backing.data() + backing.size());
  result.null_block_nonzero_bytes = null_block_nonzero_bytes(engine);
  return result;
}

double max_logit_difference(const RunResult& a, const RunResult& b) {
  double worst = 0;
  for (std::size_t r = 0; r < a.logits.size(); ++r) {
    EXPECT_EQ(a.logits[r].size(), b.logits[r].size());
    for (std::size_t i = 0; i < std::min(a.logits[r].size(), b.logits[r].size()); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(a.logits[r][i] - b.logits[r][i])));
    }
  }
  return worst;
}

TEST(EngineGraphEmulationTest, ABackendThatPlansOnTheHostIsCaughtUnderFullReplay) {
  EngineOptions options;
  options.extra_backends = {std::make_shared<PlannedSeqLensBackend>()};
  options.backend = "PLANNED_SEQ_LENS";
  const RunResult eager = run_engine("NONE", false, options);
  const RunResult replayed = run_engine("FULL_DECODE_ONLY", false, options);
  const RunResult reference = run_engine("NONE", false);
  // Eagerly the plan is rebuilt every step: the backend equals CPU_REFERENCE exactly.
  EXPECT_EQ(eager.outputs, reference.outputs);
  EXPECT_EQ(max_logit_difference(eager, reference), 0.0);
  // Replayed, its plan holds the capture's sequence lengths (max_model_len): decode attends
  // to the wrong keys, which no real graph replay would forgive either.
  EXPECT_GT(replayed.stats.steps_in(CUDAGraphMode::FULL), 0);
  EXPECT_GT(max_logit_difference(eager, replayed), 1e-2);
  EXPECT_NE(eager.outputs, replayed.outputs);
}

// Every mode, with and without fast prefill where the mode allows it: the same tokens, and on
// batch-invariant CPU_REFERENCE the same logits bit for bit.
TEST(EngineGraphEmulationTest, RealBackendsMatchEagerInEveryMode) {
  std::vector<std::string> backends = {"CPU_REFERENCE"};
  if (builtin_backends().find("CPU_FLASH") != nullptr) backends.push_back("CPU_FLASH");
  for (const std::string& backend : backends) {
    EngineOptions options;
    options.backend = backend;
    const RunResult eager = run_engine("NONE", false, options);
    for (const CUDAGraphMode mode : CUDAGraphMode::all()) {
      // FULL captures prefill-sized graphs here, which fast prefill refuses (engine_test.cc).
      // CPU_FLASH (slow in debug builds) shares the fast-prefill path with CPU_REFERENCE.
      for (const bool fast_prefill : {false, true}) {
        if (fast_prefill && (mode == CUDAGraphMode::FULL || backend != "CPU_REFERENCE")) continue;
        SCOPED_TRACE(fmt::format("{} {} fast prefill {}", backend, mode.name(), fast_prefill));
        const RunResult graphs = run_engine(std::string(mode.name()), fast_prefill, options);
        EXPECT_EQ(graphs.outputs, eager.outputs);
        EXPECT_LE(max_logit_difference(graphs, eager), backend == "CPU_REFERENCE" ? 0.0 : 1e-4);
        const EngineStats& s = graphs.stats;
        EXPECT_EQ(s.steps_in(CUDAGraphMode::FULL) > 0, mode.has_full_cudagraphs());
        EXPECT_EQ(s.steps_in(CUDAGraphMode::PIECEWISE) > 0, mode.has_piecewise_cudagraphs());
        EXPECT_EQ(s.padded_tokens > 0, mode != CUDAGraphMode::NONE);
      }
    }
  }
}

// A capture of prefill-shaped FULL graphs is fine with fast prefill when every capture batch is
// decode-shaped (sizes within max_num_seqs): prefill batches then replay the FULL graphs too.
TEST(EngineGraphEmulationTest, FullGraphsOfSmallMixedBatchesServeFastPrefillModels) {
  EngineConfig config = engine_config("FULL", true);
  config.compilation.capture_sizes = {1, 2, 4};
  const std::vector<std::int32_t> prompt = {7, 8, 9};
  EngineOptions options;
  options.backend = "CPU_REFERENCE";
  Engine graphs(config, options);
  config.compilation.cudagraph_mode = CUDAGraphMode::NONE;
  Engine eager(config, options);
  for (Engine* engine : {&graphs, &eager}) {
    engine->add_request(prompt, 4);
    engine->run();
  }
  EXPECT_EQ(graphs.stats().steps_in(CUDAGraphMode::FULL), 4);  // the 3-token prefill included
  EXPECT_EQ(graphs.requests()[0].output, eager.requests()[0].output);
}

TEST(EngineGraphEmulationTest, PaddedTokensNeverWriteTheKvCache) {
  const RunResult eager = run_engine("NONE", true);
  const RunResult padded = run_engine("FULL_AND_PIECEWISE", true);
  ASSERT_GT(padded.stats.padded_tokens, 0);
  ASSERT_GT(padded.stats.padded_requests, 0);
  // Same schedule, same blocks, same K/V: any write by a padded row would show as a difference,
  // or as bytes in the null block, which no request ever holds.
  ASSERT_EQ(padded.kv_cache.size(), eager.kv_cache.size());
  EXPECT_EQ(std::memcmp(padded.kv_cache.data(), eager.kv_cache.data(), eager.kv_cache.size()), 0);
  EXPECT_EQ(padded.null_block_nonzero_bytes, 0);
  EXPECT_EQ(eager.null_block_nonzero_bytes, 0);
}

TEST(EngineGraphEmulationTest, CapturesEveryFullDescriptorAndReplaysOnlyThose) {
  Engine engine(engine_config("FULL_AND_PIECEWISE", false));
  const auto full = engine.graph_manager().capture_descriptors(CUDAGraphMode::FULL);
  ASSERT_EQ(full.size(), 3u);  // uniform decode of 1, 2 and 4 requests
  EXPECT_EQ(engine.captured_graphs().size(), 3u);
  EXPECT_TRUE(engine.graph_manager().captured());
  for (const BatchExecutionDescriptor& d : full) {
    const auto metadata = engine.captured_graphs().replay(d);
    ASSERT_EQ(metadata.size(), 4u);
    // Frozen at the capture's padded sizes, with max_model_len-long sequences.
    EXPECT_EQ(metadata[0]->common.num_reqs, *d.num_reqs);
    EXPECT_EQ(metadata[0]->common.num_actual_tokens, d.num_tokens);
    EXPECT_EQ(metadata[0]->common.max_query_len, 1);
    EXPECT_EQ(metadata[0]->common.max_seq_len, 64);
  }
  const auto piecewise = engine.graph_manager().capture_descriptors(CUDAGraphMode::PIECEWISE);
  ASSERT_FALSE(piecewise.empty());
  try {
    engine.captured_graphs().replay(piecewise.front());
    ADD_FAILURE() << "a PIECEWISE descriptor has no captured metadata";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no graph was captured"), std::string::npos);
  }
}

}  // namespace
}  // namespace attnrt
