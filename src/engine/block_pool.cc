// BlockPool: a ring of free block ids plus a free mark per id, so that allocation and freeing are
// O(blocks moved) and a double free is caught before it corrupts the ring.

#include "attnrt/engine/block_pool.h"

#include <limits>

#include "core/fail.h"

namespace attnrt {

BlockPool::BlockPool(std::int64_t num_blocks) {
  if (num_blocks < 2 || num_blocks > std::numeric_limits<BlockId>::max()) {
    fail(
        "block pool: num_blocks {} must be in [2, {}] (the null block 0 and at least one usable "
        "block); raise cache.memory or lower the number of KV cache layers",
        num_blocks, std::numeric_limits<BlockId>::max());
  }
  ring_.resize(static_cast<std::size_t>(num_blocks - 1));
  is_free_.assign(static_cast<std::size_t>(num_blocks), 0);
  for (BlockId id = 1; id < num_blocks; ++id) push_free(id);
}

bool BlockPool::is_free(BlockId id) const {
  return id > NULL_BLOCK_ID && id < num_blocks() && is_free_[static_cast<std::size_t>(id)] != 0;
}

bool BlockPool::allocate(int count, std::vector<BlockId>& out) {
  if (count < 0) fail("block pool: cannot allocate {} blocks", count);
  if (count > num_free_) return false;
  for (int i = 0; i < count; ++i) out.push_back(pop_free());
  return true;
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int count) {
  std::vector<BlockId> ids;
  if (!allocate(count, ids)) return std::nullopt;
  return ids;
}

void BlockPool::free(std::span<const BlockId> ids) {
  // First pass: mark every id pending (2), so that a bad or repeated id is caught before any id
  // reaches the free list; the marks are undone on error.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const BlockId id = ids[i];
    if (id == NULL_BLOCK_ID) continue;
    if (id < 0 || id >= num_blocks() || is_free_[static_cast<std::size_t>(id)] != 0) {
      for (std::size_t j = 0; j < i; ++j) {
        if (ids[j] != NULL_BLOCK_ID) is_free_[static_cast<std::size_t>(ids[j])] = 0;
      }
      if (id < 0 || id >= num_blocks()) {
        fail("block pool: cannot free block {}: ids are 1..{}", id, num_blocks() - 1);
      }
      fail("block pool: block {} is freed but not allocated (a double free)", id);
    }
    is_free_[static_cast<std::size_t>(id)] = 2;
  }
  for (const BlockId id : ids) {
    if (id != NULL_BLOCK_ID) push_free(id);
  }
}

void BlockPool::check_consistency() const {
  std::vector<std::uint8_t> seen(is_free_.size(), 0);
  const int capacity = static_cast<int>(ring_.size());
  for (int i = 0; i < num_free_; ++i) {
    const BlockId id = ring_[static_cast<std::size_t>((head_ + i) % capacity)];
    if (id <= NULL_BLOCK_ID || id >= num_blocks()) fail("block pool: free list holds id {}", id);
    auto& mark = seen[static_cast<std::size_t>(id)];
    if (mark != 0) fail("block pool: block {} is twice in the free list", id);
    if (is_free_[static_cast<std::size_t>(id)] == 0) {
      fail("block pool: block {} is in the free list but marked allocated", id);
    }
    mark = 1;
  }
  for (std::size_t id = 0; id < is_free_.size(); ++id) {
    if (is_free_[id] != 0 && seen[id] == 0) {
      fail("block pool: block {} is marked free but missing from the free list", id);
    }
  }
}

BlockId BlockPool::pop_free() {
  const BlockId id = ring_[static_cast<std::size_t>(head_)];
  head_ = (head_ + 1) % static_cast<int>(ring_.size());
  --num_free_;
  is_free_[static_cast<std::size_t>(id)] = 0;
  return id;
}

void BlockPool::push_free(BlockId id) {
  const int capacity = static_cast<int>(ring_.size());
  ring_[static_cast<std::size_t>((head_ + num_free_) % capacity)] = id;
  ++num_free_;
  is_free_[static_cast<std::size_t>(id)] = 1;
}

}  // namespace attnrt
