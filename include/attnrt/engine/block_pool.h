#pragma once
// BlockPool: the manager blocks of the KV cache, shared by every KV cache group (vLLM v1's
// BlockPool without prefix caching). Block 0 is the null block: never handed out, it stands in a
// request's block list for a block it no longer holds (a sliding window moved past it) so that
// block-table columns keep their positions. Free blocks are handed out oldest-freed first.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "attnrt/core/export.h"

namespace attnrt {

using BlockId = std::int32_t;  // a manager block id, 0..num_blocks-1
inline constexpr BlockId NULL_BLOCK_ID = 0;

class ATTNRT_API BlockPool {
 public:
  // Blocks 1..num_blocks-1 start free, in ascending order. Throws Error unless
  // 2 <= num_blocks <= 2^31 - 1 (the null block and at least one usable block).
  explicit BlockPool(std::int64_t num_blocks);

  std::int64_t num_blocks() const { return static_cast<std::int64_t>(is_free_.size()); }
  int num_free() const { return num_free_; }
  bool is_free(BlockId id) const;  // false for the null block and ids out of range

  // Appends `count` free blocks to `out` and returns true, or returns false and changes nothing
  // when fewer than `count` are free (all or nothing).
  bool allocate(int count, std::vector<BlockId>& out);
  std::optional<std::vector<BlockId>> allocate(int count);

  // Returns blocks to the pool, in order; null-block entries are skipped so that a request's whole
  // block list can be freed. Throws Error, before freeing any, on an id out of range or not
  // allocated (a double free).
  void free(std::span<const BlockId> ids);

  // Debug check of the free list against the free marks; throws Error naming the first mismatch.
  void check_consistency() const;

 private:
  // The free list is a ring of capacity num_blocks - 1: pop at head_, push at the tail.
  BlockId pop_free();
  void push_free(BlockId id);

  std::vector<BlockId> ring_;
  std::vector<std::uint8_t> is_free_;  // by block id
  int head_ = 0;
  int num_free_ = 0;
};

}  // namespace attnrt
