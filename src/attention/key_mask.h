#pragma once
// The mask rule, written once (SEMANTICS §5.1): which keys a query token may attend. Both CPU
// kernels and the engine's dense reference take their key ranges from here, so they cannot
// disagree. Plain inline functions on ints: CPU_FLASH calls visible_keys once per query row.

#include <algorithm>
#include <cstdint>

#include "attnrt/attention/attention_backend.h"

namespace attnrt {

enum class MaskKind : std::uint8_t { none, causal, sliding_window, chunked_local };

struct KeyMask {
  MaskKind kind = MaskKind::causal;
  int size = 0;  // window or chunk
};

// Keys [begin, end) of a request's sequence.
struct KeyRange {
  int begin = 0;
  int end = 0;
};

// Cross attention reads the encoder's keys and a non-causal step every key; otherwise the layer's
// type decides.
constexpr KeyMask key_mask_of(const AttentionShape& shape, bool causal) {
  if (shape.type == AttentionType::cross || !causal) return {MaskKind::none, 0};
  switch (shape.type) {
    case AttentionType::sliding_window:
      return {MaskKind::sliding_window, shape.sliding_window};
    case AttentionType::chunked_local:
      return {MaskKind::chunked_local, shape.attention_chunk_size};
    default:
      return {MaskKind::causal, 0};
  }
}

// Keys the query token at absolute `position` sees among a request's `kv_len` keys. vLLM's
// sliding window of W tokens includes the query's own position: p sees [p - W + 1, p]. A chunk
// of C sees its own chunk up to p. The mask goes by value: by reference, GCC stopped inlining
// CPU_FLASH's prepare_rows into its GEMV kernels.
constexpr KeyRange visible_keys(KeyMask mask, int position, int kv_len) {
  switch (mask.kind) {
    case MaskKind::none:
      return {0, kv_len};
    case MaskKind::causal:
      return {0, position + 1};
    case MaskKind::sliding_window:
      return {std::max(0, position - mask.size + 1), position + 1};
    case MaskKind::chunked_local:
      return {position / mask.size * mask.size, position + 1};
  }
  return {0, 0};
}

}  // namespace attnrt
