#pragma once
// The dense reference of the built-in transformer: one request computed in one pass with
// unpaged attention over plain f32 K/V arrays, with the model's own weights and decoder stages.
// `attnrt run --check` compares the engine's logits and greedy tokens against it; only the
// paged path (cache, block tables, slot mappings, metadata, padding, fast prefill) differs.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/engine/tiny_transformer.h"

namespace attnrt {

struct DenseOptions {
  // Rounds every K/V entry to the model's KV cache dtype (config.cache.dtype) before attention
  // reads it, as the paged cache stores it, so a comparison measures the paged path only. Off:
  // the reference of an exact f32 cache, whose distance adds the cache's rounding.
  bool round_kv_to_cache_dtype = true;
};

struct DenseResult {
  int num_tokens = 0;
  int vocab_size = 0;
  std::vector<float> logits;  // [num_tokens, vocab_size]: the next-token logits at each position

  std::span<const float> row(int position) const {
    return std::span<const float>(logits).subspan(static_cast<std::size_t>(position) * vocab_size,
                                                  static_cast<std::size_t>(vocab_size));
  }
};

// Logits at every position of `tokens` (positions 0..n-1), attention masked as the paged kernels
// mask it: causal (full, MLA), keys [p - W + 1, p] (sliding window W), [floor(p / C) * C, p]
// (chunked local C); KV-sharing layers read their target's K/V. Throws Error for an empty
// sequence or a token outside the vocabulary.
DenseResult dense_forward(const TinyTransformer& model, std::span<const std::int32_t> tokens,
                          const DenseOptions& options = {});

}  // namespace attnrt
