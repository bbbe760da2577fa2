#pragma once
// Kernel block sizes (SEMANTICS §3.2): the block size a KV cache group's kernels run at, the
// largest that every backend of the group accepts and that divides the manager block size.

#include <span>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/kv/kv_cache_spec.h"
#include "attnrt/runner/attention_group.h"

namespace attnrt {

// `manager_block_size` if every backend accepts it; else the largest exact size some backend lists
// that divides it and every backend accepts; no backends: the manager size. Throws Error
// ("No common block size for <n>.") when there is none, and ("Kernel block-size constraints must
// not be empty.") when a backend lists no size for `spec`.
ATTNRT_API int select_common_block_size(int manager_block_size,
                                        std::span<const AttentionBackend* const> backends,
                                        const KVCacheSpec& spec);

// One kernel block size per KV cache group, in group order (attnrt's fix of SEMANTICS §9.1): a
// group without attention groups, or without a KV cache of its own (encoder-only), keeps its
// manager block size.
ATTNRT_API std::vector<int> prepare_kernel_block_sizes(
    const KVCacheConfig& kv_cache_config, std::span<const std::vector<AttentionGroup>> attn_groups);

}  // namespace attnrt
