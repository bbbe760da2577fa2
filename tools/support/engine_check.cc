// The engine against its references: the dense recomputation of every request, and fast prefill
// on versus off on the same prompts.

#include <algorithm>
#include <cmath>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "core/fail.h"
#include "support/dense_reference.h"
#include "support/engine_workload.h"

namespace attnrt {

TokenAgreement token_agreement(std::span<const float> dense_logits, std::int32_t token,
                               double tie_margin) {
  const std::int32_t dense_token = greedy_token(dense_logits);
  if (token == dense_token) return TokenAgreement::exact;
  if (token < 0 || static_cast<std::size_t>(token) >= dense_logits.size()) {
    return TokenAgreement::differs;
  }
  const double gap = static_cast<double>(dense_logits[static_cast<std::size_t>(dense_token)]) -
                     dense_logits[static_cast<std::size_t>(token)];
  return gap <= tie_margin ? TokenAgreement::near_tie : TokenAgreement::differs;
}

namespace {

// Rank 0 sends each request's tokens before computing it; every rank runs the dense forward in
// step (its projections all-reduce). An empty sequence ends the check.
DenseResult dense_forward_on_every_rank(const Engine& engine, std::vector<std::int32_t>& tokens) {
  if (engine.communicator().world() > 1) {
    std::vector<std::int64_t> values(tokens.begin(), tokens.end());
    broadcast_values(engine.communicator(), values, 0);
    tokens.assign(values.begin(), values.end());
  }
  return tokens.empty() ? DenseResult{} : dense_forward(engine.model(), tokens);
}

DenseCheck follow_dense_check(const Engine& engine) {
  std::vector<std::int32_t> tokens{0};
  while (!tokens.empty()) dense_forward_on_every_rank(engine, tokens);
  return {};
}

}  // namespace

DenseCheck check_against_dense(const Engine& engine, double tie_margin) {
  if (engine.rank() != 0) return follow_dense_check(engine);
  const TinyTransformer& model = engine.model();
  const auto vocab = static_cast<std::size_t>(model.vocab_size());
  DenseCheck check;
  std::vector<std::int32_t> tokens;
  for (const RequestRecord& request : engine.requests()) {
    if (request.output.empty()) continue;
    if (request.logits.size() != request.output.size() * vocab) {
      tokens.clear();
      dense_forward_on_every_rank(engine, tokens);  // the other ranks stop too
      fail(
          "check: request {} kept {} logits for {} generated tokens; create the engine with "
          "EngineOptions::record_logits",
          request.id, request.logits.size() / vocab, request.output.size());
    }
    // Generated token k was sampled at position prompt + k - 1; the last one is never fed back.
    tokens.assign(request.prompt.begin(), request.prompt.end());
    tokens.insert(tokens.end(), request.output.begin(), request.output.end() - 1);
    const DenseResult dense = dense_forward_on_every_rank(engine, tokens);
    for (std::size_t k = 0; k < request.output.size(); ++k) {
      const std::span<const float> expected =
          dense.row(static_cast<int>(request.prompt.size() + k) - 1);
      const float* actual = request.logits.data() + k * vocab;
      for (std::size_t v = 0; v < vocab; ++v) {
        check.max_abs_logit_diff = std::max(check.max_abs_logit_diff,
                                            static_cast<double>(std::abs(expected[v] - actual[v])));
      }
      const TokenAgreement agreement = token_agreement(expected, request.output[k], tie_margin);
      check.tokens_agree += agreement == TokenAgreement::exact ? 1 : 0;
      check.near_ties += agreement == TokenAgreement::near_tie ? 1 : 0;
      check.tokens_total += 1;
    }
  }
  tokens.clear();
  dense_forward_on_every_rank(engine, tokens);
  return check;
}

const CpuFlashBackend* cpu_flash_backend_of(const AttentionPlan& plan) {
  for (const std::vector<AttentionGroup>& groups : plan.backends.attn_groups) {
    for (const AttentionGroup& group : groups) {
      const auto* flash = dynamic_cast<const CpuFlashBackend*>(group.backend.get());
      if (flash != nullptr) return flash;
    }
  }
  return nullptr;
}

bool uses_bf16_dot_products(const Engine& engine) {
  if (engine.config().cache.dtype != DType::bf16) return false;
  const CpuFlashBackend* flash = cpu_flash_backend_of(engine.plan());
  return flash != nullptr && flash->rounds_bf16_products();
}

double dense_check_tolerance(const Engine& engine) {
  return uses_bf16_dot_products(engine) ? 1e-2 : 1e-3;
}

FastPrefillComparison compare_fast_prefill(const EngineConfig& config, EngineOptions options,
                                           std::span<const WorkloadRequest> workload) {
  options.record_logits = false;
  options.fast_prefill = true;
  Engine on(config, options);
  options.fast_prefill = false;
  Engine off(config, options);
  FastPrefillComparison comparison;
  for (const WorkloadRequest& request : workload) {
    if (on.rank() == 0) {  // the other ranks of a tensor-parallel group follow rank 0
      on.add_request(request.prompt, 1);
      off.add_request(request.prompt, 1);
    }
    comparison.prompts += 1;
    comparison.prompt_tokens += static_cast<std::int64_t>(request.prompt.size());
  }
  bool on_busy = true;
  bool off_busy = true;
  while (on_busy || off_busy) {
    if (on_busy) on_busy = on.step();
    if (off_busy) off_busy = off.step();
  }
  comparison.seconds_on = on.stats().prefill_seconds;
  comparison.seconds_off = off.stats().prefill_seconds;
  comparison.speedup =
      comparison.seconds_on > 0 ? comparison.seconds_off / comparison.seconds_on : 0;
  comparison.theoretical_speedup = on.stats().fast_prefill_theoretical_speedup();
  comparison.first_tokens_match = std::ranges::equal(
      on.requests(), off.requests(),
      [](const RequestRecord& a, const RequestRecord& b) { return a.output == b.output; });
  return comparison;
}

}  // namespace attnrt
