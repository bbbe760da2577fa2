// TinyTransformer against its dense reference, through the real library: plan_attention, KV
// cache allocation and binding, per-group metadata from each attention group's builder, on the
// CPU reference backend. The scenario prefills two requests in chunks, then decodes them, and
// every logits row of every step must equal the dense, unpaged recomputation of the request.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "attnrt/core/error.h"
#include "support/dense_reference.h"
#include "tiny_model_rig.h"

// Counts heap allocations, so that a test can show forward() makes none.
namespace {
std::atomic<long> num_allocations{0};
}  // namespace

// Not inlined: GCC would otherwise see free() paired with operator new and warn.
[[gnu::noinline]] void* operator new(std::size_t size) {
  num_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* memory) noexcept {
  std::free(memory);
}
[[gnu::noinline]] void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}

namespace attnrt::tiny_model {
namespace {

// CPU_REFERENCE that records how many query rows each forward call had.
class RowCountingBackend : public CpuReferenceBackend {
 public:
  std::string name() const override { return "ROW_COUNTING"; }
  void forward(const AttentionForwardArgs& args) const override {
    rows_.push_back(args.query.num_tokens);
    CpuReferenceBackend::forward(args);
  }
  std::vector<int>& rows() const { return rows_; }

 private:
  mutable std::vector<int> rows_;
};

// Writes nothing and attends to nothing: lets a test count the model's own allocations.
class NullAttentionBackend : public CpuReferenceBackend {
 public:
  std::string name() const override { return "NULL_ATTENTION"; }
  void write_kv(const KVWriteArgs&) const override {}
  void forward(const AttentionForwardArgs& args) const override {
    const ActivationView& out = args.output;
    for (int t = 0; t < out.num_tokens; ++t) {
      std::fill_n(out.row(t, 0), out.num_heads * out.head_size, 0.f);
    }
  }
};

std::vector<I32> two_sequences() {
  std::vector<I32> sequences(2);
  for (int p = 0; p < 13; ++p) sequences[0].push_back((11 * p + 5) % 64);
  for (int p = 0; p < 9; ++p) sequences[1].push_back((23 * p + 40) % 64);
  return sequences;
}

// Two chunked prefills (7 + 4 tokens of A, 5 of B), then decodes; padded as graphs would pad.
struct ScheduledStep {
  std::vector<Chunk> chunks;
  int num_tokens_padded;
};
std::vector<ScheduledStep> scenario() {
  return {{{{0, 0, 7}, {1, 0, 5}}, 16},
          {{{0, 7, 4}, {1, 5, 1}}, 8},
          {{{0, 11, 1}, {1, 6, 1}}, 4},
          {{{0, 12, 1}, {1, 7, 1}}, 2},
          {{{1, 8, 1}}, 1}};
}

// One logits row of a step, with the (request, position) it belongs to.
struct LogitsRow {
  int request;
  int position;
  std::vector<float> logits;
};

std::vector<LogitsRow> run_scenario(Rig& rig, const std::vector<I32>& sequences,
                                    bool fast_prefill) {
  std::vector<LogitsRow> rows;
  for (const ScheduledStep& scheduled : scenario()) {
    StepInputs inputs(rig, sequences, scheduled.chunks, scheduled.num_tokens_padded, fast_prefill,
                      /*num_logits_padded=*/4);
    rig.model->forward(inputs.model_step());
    for (int j = 0; j < rig.model->num_logits(); ++j) {
      const auto [request, position] = inputs.logits_positions()[j];
      const std::span<const float> logits = rig.model->logits_row(j);
      rows.push_back({request, position, {logits.begin(), logits.end()}});
    }
  }
  return rows;
}

float max_abs_difference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.f;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

struct Comparison {
  float max_difference = 0.f;
  int greedy_agreements = 0;
  int rows = 0;
};

Comparison compare_with_dense(const TinyTransformer& model, const std::vector<I32>& sequences,
                              const std::vector<LogitsRow>& rows, DenseOptions options = {}) {
  std::vector<DenseResult> dense;
  for (const I32& sequence : sequences) dense.push_back(dense_forward(model, sequence, options));
  Comparison comparison;
  for (const LogitsRow& row : rows) {
    const std::span<const float> expected = dense[row.request].row(row.position);
    comparison.max_difference =
        std::max(comparison.max_difference, max_abs_difference(row.logits, expected));
    comparison.greedy_agreements += greedy_token(row.logits) == greedy_token(expected);
    ++comparison.rows;
  }
  return comparison;
}

TEST(TinyTransformerTest, MatchesDenseReferenceThroughChunkedPrefillAndDecode) {
  Rig rig(yoco_config());
  const std::vector<I32> sequences = two_sequences();
  const std::vector<LogitsRow> rows = run_scenario(rig, sequences, false);
  ASSERT_EQ(rows.size(), 9u);  // 2 + 2 + 2 + 2 + 1 logits rows
  const Comparison comparison = compare_with_dense(*rig.model, sequences, rows);
  // Same weights and stages; the paged kernel sums in the dense reference's order.
  EXPECT_LT(comparison.max_difference, 1e-4f);
  EXPECT_EQ(comparison.greedy_agreements, comparison.rows);
}

TEST(TinyTransformerTest, Bf16CacheMatchesDenseReferenceThatRoundsLikeTheCache) {
  Rig rig(yoco_config(DType::bf16));
  const std::vector<I32> sequences = two_sequences();
  const std::vector<LogitsRow> rows = run_scenario(rig, sequences, false);
  // Rounding K/V to bf16 in the reference reproduces the cache's values, so only summation
  // order differs; a later layer's K/V entry can still round to the neighbouring bf16 value
  // (a 2^-8 step) after such a difference, hence `attnrt run --check`'s 1e-3 and not f32's 1e-4.
  const float rounded = compare_with_dense(*rig.model, sequences, rows).max_difference;
  EXPECT_LT(rounded, 1e-3f);
  // Without the rounding the reference misses bf16's 2^-9 relative error on every K/V entry:
  // visible, further off than the rounded reference, but far below the logits' unit scale.
  const float unrounded =
      compare_with_dense(*rig.model, sequences, rows, {.round_kv_to_cache_dtype = false})
          .max_difference;
  EXPECT_GT(unrounded, 2 * rounded) << rounded;
  EXPECT_LT(unrounded, 0.1f);
}

TEST(TinyTransformerTest, Bf16WeightsAreRoundedAndStillMatchTheReference) {
  Rig f32_model(yoco_config(), 7, DType::f32);
  Rig bf16_model(yoco_config(), 7, DType::bf16);
  const TinyTransformer::BlockWeights& f32_weights = f32_model.model->block_weights(1);
  const TinyTransformer::BlockWeights& bf16_weights = bf16_model.model->block_weights(1);
  EXPECT_EQ(bf16_weights.qkv.dtype(), DType::bf16);
  for (int c = 0; c < 8; ++c) {
    const float exact = f32_weights.qkv.get(3, c);
    EXPECT_EQ(bf16_weights.qkv.get(3, c), bf16_bits_to_float(float_to_bf16_bits(exact)));
  }
  // Matrices halve; the RMSNorm gains (2 per layer + the final one, 32 entries each) stay f32.
  EXPECT_EQ(bf16_model.model->weight_bytes() * 2 - f32_model.model->weight_bytes(),
            4u * (2 * 4 + 1) * 32);

  const std::vector<I32> sequences = two_sequences();
  const std::vector<LogitsRow> rows = run_scenario(bf16_model, sequences, false);
  EXPECT_LT(compare_with_dense(*bf16_model.model, sequences, rows).max_difference, 1e-4f);
}

TEST(TinyTransformerTest, MixedAttentionTypesMatchDenseReference) {
  EngineConfig config = yoco_config();
  config.model.layers = {make_layer("chunked", AttentionType::chunked_local),
                         make_layer("latent", AttentionType::mla),
                         make_layer("sliding", AttentionType::sliding_window),
                         make_layer("latent_reader", AttentionType::mla, "latent")};
  Rig rig(config);
  const std::vector<I32> sequences = two_sequences();
  const std::vector<LogitsRow> rows = run_scenario(rig, sequences, false);
  const Comparison comparison = compare_with_dense(*rig.model, sequences, rows);
  EXPECT_LT(comparison.max_difference, 1e-4f);
  EXPECT_EQ(comparison.greedy_agreements, comparison.rows);
}

TEST(TinyTransformerTest, FastPrefillGivesTheFullPathsLogitsOnTheLogitsRows) {
  auto counting = std::make_shared<RowCountingBackend>();
  Rig full(yoco_config(), 7, DType::f32);
  Rig fast(yoco_config(DType::f32, /*fast_prefill=*/true), 7, DType::f32, counting);
  ASSERT_EQ(fast.plan.fast_prefill_layers, (std::set<std::string>{"l2", "l3"}));
  EXPECT_EQ(fast.model->first_fast_prefill_layer(), 2);

  const std::vector<I32> sequences = two_sequences();
  const std::vector<LogitsRow> expected = run_scenario(full, sequences, false);
  const std::vector<LogitsRow> actual = run_scenario(fast, sequences, true);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LT(max_abs_difference(actual[i].logits, expected[i].logits), 1e-5f) << "row " << i;
  }
  // Steps 1 and 2 prefill: l0, l1 see the padded batch, l2, l3 the 4 padded logits rows. Decode
  // steps take the full path.
  const std::vector<int> rows_per_call = {16, 16, 4, 4, 8, 8, 4, 4, 4, 4,
                                          4,  4,  2, 2, 2, 2, 1, 1, 1, 1};
  EXPECT_EQ(counting->rows(), rows_per_call);
}

TEST(TinyTransformerTest, WeightsAreDeterministicPerSeed) {
  const std::vector<I32> sequences = two_sequences();
  Rig first(yoco_config(), 42);
  Rig again(yoco_config(), 42);
  Rig other(yoco_config(), 43);
  const DenseResult a = dense_forward(*first.model, sequences[0]);
  const DenseResult b = dense_forward(*again.model, sequences[0]);
  const DenseResult c = dense_forward(*other.model, sequences[0]);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_GT(max_abs_difference(a.logits, c.logits), 0.5f);

  const std::vector<LogitsRow> rows_a = run_scenario(first, sequences, false);
  const std::vector<LogitsRow> rows_b = run_scenario(again, sequences, false);
  for (std::size_t i = 0; i < rows_a.size(); ++i) EXPECT_EQ(rows_a[i].logits, rows_b[i].logits);
}

// A copy is the same model (weights, shapes) with its own step buffers.
TEST(TinyTransformerTest, CopiesAreTheSameModelWithTheirOwnBuffers) {
  const std::vector<I32> sequences = two_sequences();
  Rig rig(yoco_config(), 42);
  const TinyTransformer copy = *rig.model;
  EXPECT_EQ(dense_forward(copy, sequences[0]).logits,
            dense_forward(*rig.model, sequences[0]).logits);
  EXPECT_EQ(copy.weight_bytes(), rig.model->weight_bytes());
  EXPECT_NE(copy.logits().data(), rig.model->logits().data());
  run_scenario(rig, sequences, false);
  EXPECT_GT(rig.model->num_logits(), 0);
  EXPECT_EQ(copy.num_logits(), 0);  // the original's steps left the copy's buffers alone

  TinyTransformer assigned(rig.config, rig.plan.kv.forward_context, 43);
  assigned = copy;
  EXPECT_EQ(dense_forward(assigned, sequences[1]).logits, dense_forward(copy, sequences[1]).logits);
}

TEST(TinyTransformerTest, ActivationsStaySane) {
  Rig rig(yoco_config());
  const DenseResult dense = dense_forward(*rig.model, two_sequences()[0]);
  float largest = 0.f;
  double sum_of_squares = 0.0;
  for (const float logit : dense.logits) {
    largest = std::max(largest, std::abs(logit));
    sum_of_squares += static_cast<double>(logit) * logit;
  }
  const double rms = std::sqrt(sum_of_squares / static_cast<double>(dense.logits.size()));
  EXPECT_GT(rms, 0.3);  // logits of order one: neither vanishing nor exploding
  EXPECT_LT(rms, 3.0);
  EXPECT_LT(largest, 20.f);
}

TEST(TinyTransformerTest, ForwardAllocatesNothing) {
  Rig rig(yoco_config(DType::f32, true), 7, DType::f32, std::make_shared<NullAttentionBackend>());
  const std::vector<I32> sequences = two_sequences();
  // Builders own the metadata they return until their next build: build, run, then the next.
  const auto allocations_of_step = [&](std::vector<Chunk> chunks, int num_tokens_padded) {
    const StepInputs inputs(rig, sequences, std::move(chunks), num_tokens_padded, true, 4);
    const ModelStep step = inputs.model_step();
    const long before = num_allocations.load();
    rig.model->forward(step);
    return num_allocations.load() - before;
  };
  EXPECT_EQ(allocations_of_step({{0, 0, 7}, {1, 0, 5}}, 16), 0);  // fast-prefill path
  EXPECT_EQ(allocations_of_step({{0, 7, 1}, {1, 5, 1}}, 2), 0);   // decode
  EXPECT_EQ(rig.model->num_logits(), 2);
}

template <typename Build>
void expect_error(Build build, const std::string& fragment) {
  try {
    build();
    ADD_FAILURE() << "expected an Error containing: " << fragment;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(TinyTransformerTest, RefusesLayersWithoutADecoderMeaning) {
  for (const AttentionType type : {AttentionType::cross, AttentionType::encoder_only}) {
    EngineConfig config = yoco_config();
    config.model.layers[1].type = type;
    const ForwardContext context = ForwardContext::from_config(config);
    expect_error([&] { TinyTransformer(config, context, 1); },
                 fmt::format("layer l1: {} attention needs an encoder", attention_type_name(type)));
  }
  EngineConfig config = yoco_config();
  config.model.layers[3].kv_sharing_target.clear();
  config.model.layers[3].draft = true;
  const ForwardContext context = ForwardContext::from_config(config);
  expect_error([&] { TinyTransformer(config, context, 1); }, "layer l3 is a speculative draft");
}

TEST(TinyTransformerTest, RefusesFastPrefillLayersThatAreNotATrailingSharingRun) {
  const EngineConfig config = yoco_config();
  const ForwardContext context = ForwardContext::from_config(config);
  TinyTransformerOptions options;
  options.fast_prefill_layers = {"l2"};
  expect_error([&] { TinyTransformer(config, context, options); },
               "but layer l3 follows fast-prefill layer l2");
  options.fast_prefill_layers = {"l1", "l2", "l3"};
  expect_error([&] { TinyTransformer(config, context, options); },
               "fast-prefill layer l1 owns its KV cache");
  options.fast_prefill_layers = {"l9"};
  expect_error([&] { TinyTransformer(config, context, options); }, "fast-prefill layer l9 is not");
}

TEST(TinyTransformerTest, RefusesModelsTooLargeForADemo) {
  EngineConfig config = yoco_config();
  config.model.vocab_size = 1 << 20;
  const ForwardContext context = ForwardContext::from_config(config);
  TinyTransformerOptions options;
  options.max_weight_bytes = 64ull << 20;
  expect_error([&] { TinyTransformer(config, context, options); },
               "would need 256 MiB of weights (limit 64 MiB)");
}

TEST(TinyTransformerTest, RefusesBadStepsBeforeRunningAnything) {
  Rig rig(yoco_config());
  const std::vector<I32> sequences = two_sequences();
  StepInputs inputs(rig, sequences, {{0, 0, 3}}, 4, false);
  ModelStep step = inputs.model_step();

  const I32 bad_tokens = {1, 2, 64, 0};
  ModelStep bad = step;
  bad.token_ids = bad_tokens;
  expect_error([&] { rig.model->forward(bad); }, "token row 2 has id 64, outside the vocabulary");

  bad = step;
  bad.num_tokens = 33;
  expect_error([&] { rig.model->forward(bad); }, "33 token rows, but the model was sized for");

  std::vector<const AttentionMetadata*> missing(step.metadata.begin(), step.metadata.end());
  missing[2] = nullptr;
  bad = step;
  bad.metadata = missing;
  expect_error([&] { rig.model->forward(bad); }, "layer l2 has no attention metadata");

  const I32 outside = {4};
  bad = step;
  bad.logits_indices = outside;
  expect_error([&] { rig.model->forward(bad); }, "logits_indices entry 0 is row 4, outside");
}

}  // namespace
}  // namespace attnrt::tiny_model
