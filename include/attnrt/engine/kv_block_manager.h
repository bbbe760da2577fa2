#pragma once
// KVBlockManager: a request's manager blocks in every KV cache group, drawn from one BlockPool
// (vLLM v1's KVCacheCoordinator with one SingleTypeKVCacheManager per group, without prefix
// caching). A request holding T tokens' KV needs cdiv(T, block_size) block-table columns in each
// group; groups may have different block sizes. Sliding-window groups return blocks no query
// reads any more and keep NULL_BLOCK_ID in their columns. Chunked-local groups could return
// blocks of finished chunks the same way but do not yet; encoder-only groups hold no blocks.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/core/export.h"
#include "attnrt/engine/block_pool.h"
#include "attnrt/engine/request.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/kv/kv_cache_spec.h"

namespace attnrt {

class ATTNRT_API KVBlockManager {
 public:
  // Throws Error on a cross-attention group (encoder inputs are not scheduled), a sliding window
  // below 1, a block size below 1 or a pool of fewer than 2 blocks.
  explicit KVBlockManager(const KVCacheConfig& kv_cache_config);

  int num_groups() const { return static_cast<int>(groups_.size()); }
  int block_size(int group) const { return groups_[static_cast<std::size_t>(group)].block_size; }
  const BlockPool& pool() const { return pool_; }

  // Gives a new request one (empty) block list per group, with room for `max_tokens` tokens.
  void prepare(Request& request, int max_tokens) const;
  // The most blocks, summed over groups, that a request ever holds when at most `max_kv_tokens`
  // of its tokens need KV and a step computes at most `max_step_tokens` of them. A sliding
  // window of W tokens holds at most cdiv(W - 1 + max_step_tokens, block_size) + 1 (SEMANTICS
  // §4.1's per-request cap).
  int max_blocks_per_request(int max_kv_tokens, int max_step_tokens) const;

  // Sliding-window groups: returns the blocks wholly before the first token a query at position
  // num_computed_tokens still reads (num_computed_tokens - sliding_window + 1), lowest column
  // first, leaving NULL_BLOCK_ID in their columns.
  void remove_skipped_blocks(Request& request);
  // New blocks, summed over groups, for the request to hold KV for `num_tokens` tokens.
  int num_blocks_needed(const Request& request, int num_tokens) const;
  // Appends those blocks to the request's lists and returns true, or returns false and changes
  // nothing when the pool has too few (all groups or none).
  bool allocate_slots(Request& request, int num_tokens);
  // Returns every block the request holds and empties its lists.
  void free(Request& request);

  // Debug check: every usable block is either free or held by exactly one (request, group) of
  // `holders`, and the pool's free list is consistent. Throws Error naming the block.
  void check_consistency(std::span<const Request* const> holders) const;

 private:
  struct Group {
    KVSpecKind kind = KVSpecKind::full;
    int block_size = 1;
    int sliding_window = 0;  // sliding_window kind only
  };

  int blocks_needed(const Group& group, const std::vector<BlockId>& ids, int num_tokens) const;

  std::vector<Group> groups_;
  BlockPool pool_;
};

}  // namespace attnrt
