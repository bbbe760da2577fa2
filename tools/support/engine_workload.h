#pragma once
// What `attnrt run` feeds the engine and what it checks afterwards: a seeded workload of random
// prompts, the digest of every request's generated tokens, the dense check of each generated
// token, and fast prefill on and off measured side by side on the same prompts.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/engine/engine.h"

namespace attnrt {

struct WorkloadOptions {
  int num_requests = 64;
  int min_prompt_len = 32;  // prompt lengths are uniform in [min, max]
  int max_prompt_len = 192;
  int min_output_len = 16;  // max_tokens, uniform in [min, max]
  int max_output_len = 64;
  std::uint64_t seed = 0;
};

struct WorkloadRequest {
  std::vector<std::int32_t> prompt;  // token ids uniform over the vocabulary
  int max_tokens = 1;
};

// Throws Error naming the option when a range is empty or negative, a prompt could reach
// max_model_len, or a prompt and its output together could exceed it (vLLM refuses such a
// request rather than cut its output short).
void check_workload_options(const WorkloadOptions& options, int max_model_len);

// The same requests for the same options on every platform (SplitMix64, no std distributions).
// Checks the options first (check_workload_options).
std::vector<WorkloadRequest> make_workload(const WorkloadOptions& options, int vocab_size,
                                           int max_model_len);
// Queues every request, all arriving before the first step (continuous batching admits them as
// max_num_seqs and the token budget allow).
void submit(Engine& engine, std::span<const WorkloadRequest> workload);

// FNV-1a 64 over every request's generated token ids in request order, each request's count
// first, so that two runs can be compared by one number.
std::uint64_t output_digest(std::span<const RequestRecord> requests);

struct DenseCheck {
  double max_abs_logit_diff = 0;
  std::int64_t tokens_agree = 0;  // the dense argmax equals the engine's token
  // The engine's token differs, but its dense logit is within the tie margin of the argmax's:
  // a near-tie that logits within the tolerance may order either way.
  std::int64_t near_ties = 0;
  std::int64_t tokens_total = 0;
};

// How a generated token compares with the dense logits at its position: their argmax, a
// near-tie (its logit at most `tie_margin` below the argmax's), or a different token.
enum class TokenAgreement : std::uint8_t { exact, near_tie, differs };
TokenAgreement token_agreement(std::span<const float> dense_logits, std::int32_t token,
                               double tie_margin);

// Recomputes every request with dense_forward (one pass over its prompt and generated tokens)
// and compares each generated token's logits row; a differing token is a near-tie when its
// dense logit is at most `tie_margin` below the argmax's. Throws Error unless the engine
// recorded logits (EngineOptions::record_logits). A tensor-parallel engine calls it on every
// rank (the dense forward all-reduces too); rank 0 returns the figures, the others zeros.
DenseCheck check_against_dense(const Engine& engine, double tie_margin = 0);

// The CPU_FLASH backend of the plan's first group that runs it unwrapped, or nullptr.
const CpuFlashBackend* cpu_flash_backend_of(const AttentionPlan& plan);
// Whether a CPU_FLASH group serves the engine's bf16 cache with bf16-rounded products
// (AVX512-BF16 dot products in decode or AMX-BF16 tiles in prefill).
bool uses_bf16_dot_products(const Engine& engine);
// The logit tolerance of a dense check of `engine`. With f32 products both computations are f32
// from the same K/V and differ only in the order of some sums: logits of magnitude ~10 agree to
// ~1e-5, so 1e-3. Dot products also round the query rows and softmax weights to bf16 (within
// kBf16DotTolerance per attention output; the default model's logits agree to ~2e-3), so 1e-2.
double dense_check_tolerance(const Engine& engine);

struct FastPrefillComparison {
  int prompts = 0;
  std::int64_t prompt_tokens = 0;
  double seconds_on = 0;  // prefill step time with fast prefill
  double seconds_off = 0;
  double speedup = 0;              // seconds_off / seconds_on
  double theoretical_speedup = 0;  // 1 / (1 - f), f the skipped share of the layer work
  bool first_tokens_match = false;
};

// Prefills every prompt of `workload` (max_tokens 1) on two engines of `config`, fast prefill on
// and off, stepping them alternately so that both see the same machine load.
FastPrefillComparison compare_fast_prefill(const EngineConfig& config, EngineOptions options,
                                           std::span<const WorkloadRequest> workload);

}  // namespace attnrt
