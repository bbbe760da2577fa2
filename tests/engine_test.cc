// Engine: the step loop against the dense reference, fast prefill on versus off, its counts on
// small runs worked out by hand, preemption, what it refuses, and the workload and digest of
// `attnrt run`. The model is tiny_model_rig.h's 4-layer YOCO config (two owning layers, two
// sharing their caches) on CPU_REFERENCE.

#include "attnrt/engine/engine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attnrt/core/error.h"
#include "error_of.h"
#include "run/run_report.h"
#include "support/engine_workload.h"
#include "tiny_model_rig.h"

namespace attnrt {
namespace {

using testing::error_of;

// Graphs for 1..32 tokens; FULL_AND_PIECEWISE decodes up to 4 requests in FULL graphs.
EngineConfig engine_config(const std::string& mode, bool fast_prefill) {
  EngineConfig config = tiny_model::yoco_config(DType::f32, fast_prefill);
  config.compilation.cudagraph_mode = CUDAGraphMode::parse(mode);
  config.compilation.capture_sizes = {1, 2, 4, 8, 16, 32};
  config.cache.memory = 256 << 10;
  return config;
}

// Pinned to the batch-invariant oracle, so that exact comparisons hold whatever the default is.
EngineOptions reference_options() {
  EngineOptions options;
  options.backend = "CPU_REFERENCE";
  return options;
}

WorkloadOptions small_workload(std::uint64_t seed = 3) {
  WorkloadOptions workload;
  workload.num_requests = 7;
  workload.min_prompt_len = 3;
  workload.max_prompt_len = 40;
  workload.min_output_len = 2;
  workload.max_output_len = 10;
  workload.seed = seed;
  return workload;
}

void run_workload(Engine& engine, const WorkloadOptions& options) {
  const auto workload =
      make_workload(options, engine.model().vocab_size(), engine.config().model.max_model_len);
  submit(engine, workload);
  engine.run();
}

std::vector<std::vector<std::int32_t>> outputs(const Engine& engine) {
  std::vector<std::vector<std::int32_t>> out;
  for (const RequestRecord& request : engine.requests()) out.push_back(request.output);
  return out;
}

double max_logit_difference(const Engine& a, const Engine& b) {
  double worst = 0;
  for (std::size_t r = 0; r < a.requests().size(); ++r) {
    const std::vector<float>& x = a.requests()[r].logits;
    const std::vector<float>& y = b.requests()[r].logits;
    EXPECT_EQ(x.size(), y.size()) << "request " << r;
    for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
    }
  }
  return worst;
}

TEST(EngineTest, EveryGeneratedTokenAgreesWithTheDenseRecomputation) {
  EngineOptions options = reference_options();
  options.seed = 11;
  options.record_logits = true;
  Engine engine(engine_config("FULL_AND_PIECEWISE", true), options);
  run_workload(engine, small_workload());
  EXPECT_EQ(engine.num_finished(), 7);
  const DenseCheck check = check_against_dense(engine);
  EXPECT_GT(check.tokens_total, 7);
  EXPECT_EQ(check.tokens_agree, check.tokens_total);
  // CPU_REFERENCE and the dense reference do the same f32 arithmetic in the same order on the
  // same (f32) K/V, and every routine computes a row alone, so padding, paging and fast prefill
  // leave the logits bit-identical; 1e-5 only allows for a compiler contracting differently.
  EXPECT_LE(check.max_abs_logit_diff, 1e-5);
  // The run exercised graphs and fast prefill, so the agreement covers them.
  EXPECT_GT(engine.stats().steps_in(CUDAGraphMode::FULL), 0);
  EXPECT_GT(engine.stats().steps_in(CUDAGraphMode::PIECEWISE), 0);
  EXPECT_GT(engine.stats().fast_prefill_rows_skipped, 0);
}

// A dense check tells the argmax, a near-tie within the margin, and a real difference apart;
// a token outside the vocabulary is never a tie.
TEST(EngineTest, TokenAgreementSeparatesNearTiesFromDifferences) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.995f, -4.0f};
  EXPECT_EQ(token_agreement(logits, 1, 0.0), TokenAgreement::exact);
  EXPECT_EQ(token_agreement(logits, 2, 0.0), TokenAgreement::differs);
  EXPECT_EQ(token_agreement(logits, 2, 0.02), TokenAgreement::near_tie);
  EXPECT_EQ(token_agreement(logits, 0, 0.02), TokenAgreement::differs);
  EXPECT_EQ(token_agreement(logits, 4, 100.0), TokenAgreement::differs);
  EXPECT_EQ(token_agreement(logits, -1, 100.0), TokenAgreement::differs);
}

// The check's tolerance follows the products: 1e-3 where every product is f32 (CPU_REFERENCE
// here), and 1e-2 only where CPU_FLASH serves a bf16 cache with dot products.
TEST(EngineTest, DenseCheckToleranceFollowsTheProducts) {
  Engine engine(engine_config("FULL_AND_PIECEWISE", true), reference_options());
  EXPECT_FALSE(uses_bf16_dot_products(engine));
  EXPECT_EQ(dense_check_tolerance(engine), 1e-3);
}

TEST(EngineTest, FastPrefillOnAndOffGenerateTheSameTokensAndLogits) {
  EngineOptions options = reference_options();
  options.seed = 5;
  options.record_logits = true;
  options.fast_prefill = true;
  Engine on(engine_config("FULL_AND_PIECEWISE", false), options);
  options.fast_prefill = false;
  Engine off(engine_config("FULL_AND_PIECEWISE", false), options);
  run_workload(on, small_workload(8));
  run_workload(off, small_workload(8));
  EXPECT_EQ(on.plan().fast_prefill_layers.size(), 2u);
  EXPECT_TRUE(off.plan().fast_prefill_layers.empty());
  EXPECT_GT(on.stats().fast_prefill_rows_skipped, 0);
  EXPECT_EQ(off.stats().fast_prefill_rows_skipped, 0);
  EXPECT_EQ(outputs(on), outputs(off));
  // The logits rows of every sampled position: the sharing layers ran on those rows alone in one
  // run and on the whole batch in the other; rows are computed independently.
  EXPECT_LE(max_logit_difference(on, off), 1e-5);
}

// One request of 10 prompt tokens generating 3: a PIECEWISE prefill padded 10 → 16 rows whose
// sharing layers run on the 1 logits row (a 1-row PIECEWISE graph: 15 rows skipped), then two
// single-token decodes in the FULL graph of 1 token.
TEST(EngineTest, FastPrefillSkipsAllButTheLogitsRowOfAPrefill) {
  Engine engine(engine_config("FULL_AND_PIECEWISE", true), reference_options());
  const std::vector<std::int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  engine.add_request(prompt, 3);
  engine.run();
  const EngineStats& stats = engine.stats();
  EXPECT_EQ(stats.steps, 3);
  EXPECT_EQ(stats.steps_in(CUDAGraphMode::PIECEWISE), 1);
  EXPECT_EQ(stats.steps_in(CUDAGraphMode::FULL), 2);
  EXPECT_EQ(stats.prefill_tokens, 10);
  EXPECT_EQ(stats.decode_tokens, 2);
  EXPECT_EQ(stats.padded_tokens, 6);
  EXPECT_EQ(stats.fast_prefill_steps, 1);
  EXPECT_EQ(stats.fast_prefill_rows_skipped, 15);
  EXPECT_GT(stats.fast_prefill_theoretical_speedup(), 1.0);
  EXPECT_EQ(engine.requests()[0].output.size(), 3u);
}

// Three 5-token prompts, 2 tokens each: the 15-token prefill pads to the 16-token PIECEWISE
// graph (1 row); the 3-request decode pads to the FULL graph of 4 uniform requests (1 row, 1
// request). Without graphs nothing pads.
TEST(EngineTest, CountsStepsPaddingAndTokensByHand) {
  for (const bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "FULL_AND_PIECEWISE" : "NONE");
    Engine engine(engine_config(graphs ? "FULL_AND_PIECEWISE" : "NONE", false),
                  reference_options());
    for (int r = 0; r < 3; ++r) engine.add_request(std::vector<std::int32_t>(5, r + 1), 2);
    engine.run();
    const EngineStats& stats = engine.stats();
    EXPECT_EQ(stats.steps, 2);
    EXPECT_EQ(stats.prefill_tokens, 15);
    EXPECT_EQ(stats.decode_tokens, 3);
    EXPECT_EQ(stats.steps_in(CUDAGraphMode::PIECEWISE), graphs ? 1 : 0);
    EXPECT_EQ(stats.steps_in(CUDAGraphMode::FULL), graphs ? 1 : 0);
    EXPECT_EQ(stats.steps_in(CUDAGraphMode::NONE), graphs ? 0 : 2);
    EXPECT_EQ(stats.padded_tokens, graphs ? 2 : 0);
    EXPECT_EQ(stats.padded_requests, graphs ? 1 : 0);
    EXPECT_DOUBLE_EQ(stats.padding_overhead(), graphs ? 2.0 / 18.0 : 0.0);
    // Each request holds 2 blocks of 4 tokens (6 KV tokens) in each of the 2 groups.
    EXPECT_EQ(stats.peak_kv_blocks, 3 * 2 * 2);
    EXPECT_EQ(engine.num_kv_blocks_in_use(), 0);
    EXPECT_EQ(engine.num_finished(), 3);
  }
}

// A pool too small for four long requests at once: requests are preempted, recomputed, and
// still generate exactly what an unconstrained run generates.
TEST(EngineTest, PreemptedRequestsRecomputeToTheSameTokens) {
  WorkloadOptions workload = small_workload(21);
  workload.num_requests = 6;
  workload.min_prompt_len = 30;
  workload.min_output_len = 16;
  workload.max_output_len = 20;
  EngineConfig tight = engine_config("FULL_AND_PIECEWISE", true);
  tight.cache.memory = 16 << 10;
  Engine constrained(tight, reference_options());
  Engine roomy(engine_config("FULL_AND_PIECEWISE", true), reference_options());
  run_workload(constrained, workload);
  run_workload(roomy, workload);
  EXPECT_GT(constrained.stats().preemptions, 0);
  EXPECT_EQ(roomy.stats().preemptions, 0);
  EXPECT_LE(constrained.stats().peak_kv_blocks, constrained.num_kv_blocks());
  EXPECT_EQ(constrained.num_finished(), 6);
  EXPECT_EQ(outputs(constrained), outputs(roomy));
}

TEST(EngineTest, RefusesWhatItCannotRun) {
  EngineConfig speculative = engine_config("NONE", false);
  speculative.speculative.num_speculative_tokens = 2;
  EXPECT_NE(error_of([&] { Engine engine(speculative); }).find("num_speculative_tokens is 2"),
            std::string::npos);

  // FLASH_ATTN is a built-in GPU profile: plan-only, no kernel here.
  EngineConfig gpu = engine_config("NONE", false);
  gpu.cache.block_size = 16;
  EngineOptions flash;
  flash.backend = "FLASH_ATTN";
  const std::string plan_only = error_of([&] { Engine engine(gpu, flash); });
  EXPECT_NE(plan_only.find("plan-only"), std::string::npos) << plan_only;
  EXPECT_NE(plan_only.find("FLASH_ATTN"), std::string::npos) << plan_only;

  // FULL graphs of 8+ tokens over at most 4 requests hold prefill chunks, which the fast-prefill
  // layers cannot replay.
  const std::string full = error_of([] { Engine engine(engine_config("FULL", true)); });
  EXPECT_NE(full.find("FULL_AND_PIECEWISE or FULL_DECODE_ONLY"), std::string::npos) << full;

  Engine engine(engine_config("NONE", false));
  const std::vector<std::int32_t> outside = {3, 64};
  EXPECT_NE(error_of([&] { engine.add_request(outside, 2); }).find("outside the vocabulary"),
            std::string::npos);
}

TEST(EngineWorkloadTest, IsTheSameForASeedAndWithinItsRanges) {
  const WorkloadOptions options = small_workload(42);
  const auto a = make_workload(options, 64, 64);
  const auto b = make_workload(options, 64, 64);
  const auto c = make_workload(small_workload(43), 64, 64);
  ASSERT_EQ(a.size(), 7u);
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].max_tokens, b[i].max_tokens);
    EXPECT_GE(a[i].prompt.size(), 3u);
    EXPECT_LE(a[i].prompt.size(), 40u);
    EXPECT_GE(a[i].max_tokens, 2);
    EXPECT_LE(a[i].max_tokens, 10);
    for (const std::int32_t token : a[i].prompt) EXPECT_TRUE(token >= 0 && token < 64);
    differs = differs || a[i].prompt != c[i].prompt;
  }
  EXPECT_TRUE(differs);

  WorkloadOptions too_long = options;
  too_long.max_prompt_len = 64;
  EXPECT_NE(error_of([&] { make_workload(too_long, 64, 64); }).find("--prompt-len"),
            std::string::npos);
  WorkloadOptions reversed = options;
  reversed.min_output_len = 11;
  EXPECT_NE(error_of([&] { make_workload(reversed, 64, 64); }).find("--output-len 11:10"),
            std::string::npos);
}

TEST(EngineWorkloadTest, OutputDigestIsFnv1aOverCountsAndTokens) {
  // FNV-1a 64 of the little-endian uint32 stream 2, 1, 2 | 0 | 1, 1023 (worked out separately).
  std::vector<RequestRecord> records(3);
  records[0].output = {1, 2};
  records[2].output = {1023};
  EXPECT_EQ(output_digest(records), 0x882e8e5e6388372full);
  EXPECT_EQ(output_digest({}), 0xcbf29ce484222325ull);  // the FNV offset basis
  records[2].output = {1022};
  EXPECT_NE(output_digest(records), 0x882e8e5e6388372full);
}

// The JSON keys `attnrt run --json` promises (DESIGN.md §1), with the run's own figures.
TEST(EngineReportTest, JsonCarriesTheRunsFigures) {
  EngineOptions options = reference_options();
  options.record_logits = true;
  Engine engine(engine_config("FULL_AND_PIECEWISE", true), options);
  const WorkloadOptions workload = small_workload();
  run_workload(engine, workload);
  cli::RunReport report = cli::make_run_report(engine, workload, 1.0);
  report.check = check_against_dense(engine);
  report.check_tolerance = 1e-5;
  const nlohmann::json json = cli::run_report_json(report);
  const EngineStats& stats = engine.stats();
  EXPECT_EQ(json["requests"], 7);
  EXPECT_EQ(json["output_tokens"], report.output_tokens);
  EXPECT_EQ(json["prompt_tokens"], stats.prefill_tokens);  // no preemption: prompts once
  EXPECT_GT(json["prefill_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(json["decode_tokens_per_s"].get<double>(), 0);
  EXPECT_EQ(json["steps_by_mode"]["FULL"], stats.steps_in(CUDAGraphMode::FULL));
  EXPECT_EQ(json["steps_by_mode"]["PIECEWISE"], stats.steps_in(CUDAGraphMode::PIECEWISE));
  EXPECT_EQ(json["steps_by_mode"]["NONE"], 0);
  EXPECT_EQ(json["fast_prefill"]["enabled"], true);
  EXPECT_EQ(json["fast_prefill"]["rows_skipped"], stats.fast_prefill_rows_skipped);
  EXPECT_EQ(json["preemptions"], 0);
  EXPECT_EQ(json["output_digest"], fmt::format("{:016x}", output_digest(engine.requests())));
  EXPECT_EQ(json["check"]["tokens_agree"], json["check"]["tokens_total"]);
  EXPECT_EQ(json["check"]["passed"], true);
  EXPECT_NE(cli::run_report_text(report).find("tokens agree"), std::string::npos);
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// Steps until some running request has generated a token while another still waits.
const Request* step_until_running_and_waiting(Engine& engine) {
  for (int step = 0; step < 40 && engine.step(); ++step) {
    if (engine.scheduler().num_waiting() == 0) continue;
    for (const Request* request : engine.scheduler().running()) {
      if (request->num_output_tokens() > 0) return request;
    }
  }
  return nullptr;
}

// CPU_REFERENCE computes each row alone, so cancelling requests must not change what the others
// generate; the cancelled ones keep the prefix they had generated.
TEST(EngineAbortTest, FreesTheBlocksOfCancelledRequestsAndLeavesTheOthersUnchanged) {
  Engine uncancelled(engine_config("FULL_AND_PIECEWISE", true), reference_options());
  run_workload(uncancelled, small_workload());
  Engine engine(engine_config("FULL_AND_PIECEWISE", true), reference_options());
  submit(engine, make_workload(small_workload(), engine.model().vocab_size(),
                               engine.config().model.max_model_len));

  const Request* running = step_until_running_and_waiting(engine);
  ASSERT_NE(running, nullptr);
  const RequestId running_id = running->id;
  const auto waiting_id = static_cast<RequestId>(engine.requests().size()) - 1;  // FCFS: last
  ASSERT_NE(waiting_id, running_id);
  const int held = running->num_owned_blocks(0) + running->num_owned_blocks(1);
  const int in_use = engine.num_kv_blocks_in_use();
  engine.abort_request(running_id);
  engine.abort_request(waiting_id);
  EXPECT_EQ(engine.num_kv_blocks_in_use(), in_use - held);
  EXPECT_EQ(engine.num_aborted(), 2);
  engine.scheduler().check_consistency();

  engine.run();
  EXPECT_EQ(engine.num_finished(), 5);
  EXPECT_EQ(engine.num_kv_blocks_in_use(), 0);
  for (const RequestRecord& record : engine.requests()) {
    const std::vector<std::int32_t>& expected =
        uncancelled.requests()[static_cast<std::size_t>(record.id)].output;
    if (record.id == running_id || record.id == waiting_id) {
      EXPECT_TRUE(record.aborted && !record.finished) << "request " << record.id;
      EXPECT_LT(record.output.size(), expected.size()) << "request " << record.id;
      EXPECT_TRUE(std::equal(record.output.begin(), record.output.end(), expected.begin()));
    } else {
      EXPECT_TRUE(record.finished && !record.aborted) << "request " << record.id;
      EXPECT_EQ(record.output, expected) << "request " << record.id;
    }
  }
  EXPECT_FALSE(engine.requests()[static_cast<std::size_t>(running_id)].output.empty());
  EXPECT_TRUE(engine.requests()[static_cast<std::size_t>(waiting_id)].output.empty());
}

TEST(EngineAbortTest, RejectsFinishedAbortedAndUnknownIdsAndChangesNothing) {
  Engine engine(engine_config("NONE", false), reference_options());
  const std::vector<std::int32_t> prompt = {1, 2, 3};
  engine.add_request(prompt, 1);
  engine.add_request(prompt, 8);
  engine.step();  // request 0 generates its one token and finishes
  engine.abort_request(1);
  EXPECT_NE(error_of([&] { engine.abort_request(0); }).find("already finished or was aborted"),
            std::string::npos);
  EXPECT_NE(error_of([&] { engine.abort_request(1); }).find("already finished or was aborted"),
            std::string::npos);
  EXPECT_NE(error_of([&] { engine.abort_request(2); }).find("no such request"), std::string::npos);
  EXPECT_EQ(engine.num_aborted(), 1);
  EXPECT_TRUE(engine.requests()[0].finished);
  EXPECT_FALSE(engine.requests()[0].aborted);
  EXPECT_FALSE(engine.has_unfinished_requests());
  EXPECT_FALSE(engine.step());
  EXPECT_EQ(engine.num_kv_blocks_in_use(), 0);
}

}  // namespace
}  // namespace attnrt
