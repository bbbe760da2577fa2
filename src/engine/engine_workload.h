#pragma once
// What `attnrt run` feeds the engine and what it checks afterwards: a seeded workload of random
// prompts, the digest of every request's generated tokens, the dense check of each generated
// token, and fast prefill on and off measured side by side on the same prompts.

#include <cstdint>
#include <span>
#include <vector>

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
  std::int64_t tokens_total = 0;
};

// Recomputes every request with dense_forward (one pass over its prompt and generated tokens)
// and compares each generated token's logits row. Throws Error unless the engine recorded
// logits (EngineOptions::record_logits).
DenseCheck check_against_dense(const Engine& engine);

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
