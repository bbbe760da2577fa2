#pragma once
// Copying whole manager blocks inside a KV cache (prefix-cache forks, swaps): every layer's
// kernel blocks of block `src` are copied onto those of `dst`; padding bytes are never touched.

#include <cstdint>
#include <span>

#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_views.h"

namespace attnrt {

struct BlockCopy {
  std::int64_t src = 0;
  std::int64_t dst = 0;
};

// Throws Error naming the block if an id is outside [0, num_blocks), before copying anything.
// Views aliased by several layers (KV sharing) are copied once.
ATTNRT_API void copy_kv_cache_blocks(const KVCacheAllocation& cache,
                                     std::span<const BlockCopy> copies);

}  // namespace attnrt
