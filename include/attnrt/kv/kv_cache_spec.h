#pragma once
// KVCacheSpec: what one layer needs from the paged KV cache (SEMANTICS §4.1). A value type:
// equal specs share a KV cache group, so every field takes part in ==. Page size is the bytes of
// one manager block of one layer: heads × states × (K + V content), or the padded size if set.
// State kinds (mamba, linear_attention; SEMANTICS §4.4) hold one request's recurrent state per
// block: their page is the sum of their state tensors, seen as one head slot of one state of
// int8 bytes, so that layouts and views treat it as a contiguous page.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/state_shapes.h"

namespace attnrt {

// A spec's kind is its layer's attention type: one enumeration, one name table
// (attention_type_name). KVSpecKind names it where the code speaks of specs, as vLLM's does.
using KVSpecKind = AttentionType;

struct ATTNRT_API KVCacheSpec {
  KVSpecKind kind = KVSpecKind::full;
  int block_size = 16;  // tokens per manager block
  int num_kv_heads = 1;
  int head_size = 0;
  int head_size_v = 0;  // 0 for MLA (one latent vector per token)
  DType dtype = DType::bf16;
  std::optional<std::int64_t> page_size_padded;  // bytes; at least the real page
  int num_head_slots = 0;                        // 0: num_kv_heads
  std::int64_t state_content_bytes = 0;          // 0: (head_size + head_size_v) × dtype size
  int tokens_per_state = 1;                      // > 1: compressed states (several tokens each)
  int sliding_window = 0;                        // sliding_window kind
  int attention_chunk_size = 0;                  // chunked_local kind
  std::vector<StateTensor> state_tensors;        // state kinds: one request's state, per rank
  int num_speculative_blocks = 0;                // state kinds: blocks kept for draft tokens

  // Constructors of each kind. `mla` pads the page up to a multiple of `alignment` (0: none).
  static KVCacheSpec full(int block_size, int num_kv_heads, int head_size, DType dtype,
                          int head_size_v = -1);
  static KVCacheSpec sliding(int block_size, int num_kv_heads, int head_size, DType dtype,
                             int sliding_window, int head_size_v = -1);
  static KVCacheSpec chunked_local(int block_size, int num_kv_heads, int head_size, DType dtype,
                                   int attention_chunk_size, int head_size_v = -1);
  static KVCacheSpec mla(int block_size, int head_size, DType dtype, int alignment = 0);
  static KVCacheSpec cross(int block_size, int num_kv_heads, int head_size, DType dtype,
                           int head_size_v = -1);
  // A state kind (mamba or linear_attention) of `state_tensors`, unpadded; a request holds
  // 1 + num_speculative_blocks blocks.
  static KVCacheSpec state(KVSpecKind kind, int block_size, std::vector<StateTensor> state_tensors,
                           int num_speculative_blocks = 0);

  bool is_state() const { return is_state_layer_type(kind); }

  int num_heads() const { return num_head_slots > 0 ? num_head_slots : num_kv_heads; }
  // States per block of `block_size` tokens (block_size / tokens_per_state, at least 1; one
  // for the state kinds).
  int num_kernel_states(int block_size) const;
  int num_states() const { return num_kernel_states(block_size); }
  std::int64_t state_content_size_bytes() const;
  std::int64_t real_page_size_bytes() const;
  std::int64_t page_size_bytes() const;
  bool is_padded() const { return page_size_bytes() != real_page_size_bytes(); }
  bool owns_kv_cache() const { return kind != KVSpecKind::encoder_only; }

  // Upper bound of the bytes one request may hold in this layer's cache.
  std::int64_t max_memory_usage_bytes(const EngineConfig& config) const;
  // Blocks one request of `max_len` tokens holds (1 + num_speculative_blocks for state kinds).
  std::int64_t max_num_blocks_per_req(int max_len) const;
  // The same spec at another block size. A state page does not depend on it and keeps its padding.
  KVCacheSpec with_block_size(int new_block_size) const;
  std::string describe() const;  // "full(block 16, kv_heads 2, head 32, bfloat16, page 4 KiB)"

  friend bool operator==(const KVCacheSpec&, const KVCacheSpec&) = default;
};

// Hashes every field ==, so that layers can be bucketed by spec in one pass.
struct ATTNRT_API KVCacheSpecHash {
  std::size_t operator()(const KVCacheSpec& spec) const;
};

}  // namespace attnrt
