#pragma once
// How a model that mixes attention and state layers sizes its blocks (SEMANTICS §4.4), as vLLM's
// hybrid block-size alignment does: state and attention pages share one pool, so the attention
// block size is raised until an attention page holds a state page, in multiples of the kernel
// alignment, and the state page is then padded to exactly the attention page.

#include <cstdint>
#include <optional>
#include <string>

#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_planner.h"

namespace attnrt {

struct ATTNRT_API HybridBlockSize {
  int requested_block_size = 16;  // the configured block size
  int alignment = 16;             // max(smallest kernel block size, requested block size)
  int block_size = 16;            // the attention block size after alignment
  std::int64_t attention_bytes_per_token = 0;  // one token of one attention layer
  std::int64_t state_page_bytes = 0;           // one state block, unpadded
  std::int64_t page_size_bytes = 0;            // block_size × attention_bytes_per_token
  std::int64_t padding_bytes() const { return page_size_bytes - state_page_bytes; }
  bool raised() const { return block_size != requested_block_size; }
  // vLLM's log lines: "Setting attention block size to ..." when raised, "Padding mamba page size
  // by x.xx% ..." when padded.
  std::optional<std::string> block_size_message() const;
  std::optional<std::string> padding_message() const;
};

// The smallest multiple of `alignment` (itself at least `requested_block_size`) whose attention
// page, `attention_bytes_per_token` per token, holds `state_page_bytes`; never below the request.
// Throws Error for non-positive inputs or a block size beyond int.
ATTNRT_API HybridBlockSize align_hybrid_block_size(int requested_block_size, int kernel_alignment,
                                                   std::int64_t attention_bytes_per_token,
                                                   std::int64_t state_page_bytes);

// Aligns the specs of a model that has both attention and state layers: A is the most bytes one
// token of one attention layer takes, the state page the largest one; every attention spec gets
// the aligned block size and every state spec that block size and a page padded to block × A.
// Returns nullopt, changing nothing, unless both kinds own a cache. Throws Error (naming the
// layer) when a spec cannot take the block size; `specs` is then unchanged.
ATTNRT_API std::optional<HybridBlockSize> align_hybrid_kv_cache_specs(LayerSpecs& specs,
                                                                      int kernel_alignment);

}  // namespace attnrt
