// KVBlockManager: per-group block needs, all-or-nothing allocation across groups, sliding-window
// release and the ownership check of the soak test.

#include "attnrt/engine/kv_block_manager.h"

#include <algorithm>

#include "core/fail.h"

namespace attnrt {
namespace {

int cdiv(int a, int b) {
  return (a + b - 1) / b;
}

}  // namespace

KVBlockManager::KVBlockManager(const KVCacheConfig& kv_cache_config)
    : pool_(kv_cache_config.num_blocks) {
  const auto& specs = kv_cache_config.kv_cache_groups;
  groups_.reserve(specs.size());
  for (std::size_t g = 0; g < specs.size(); ++g) {
    const KVCacheSpec& spec = specs[g].kv_cache_spec;
    if (spec.kind == KVSpecKind::cross) {
      fail(
          "KV cache group {} holds cross-attention layers: the scheduler does not schedule "
          "encoder inputs; run a decoder-only model",
          g);
    }
    if (spec.block_size < 1) {
      fail("KV cache group {}: block size {} must be >= 1", g, spec.block_size);
    }
    if (spec.kind == KVSpecKind::sliding_window && spec.sliding_window < 1) {
      fail("KV cache group {}: sliding window {} must be >= 1", g, spec.sliding_window);
    }
    groups_.push_back({spec.kind, spec.block_size, spec.sliding_window});
  }
}

void KVBlockManager::prepare(Request& request, int max_tokens) const {
  request.block_ids.resize(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    request.block_ids[g].clear();
    if (groups_[g].kind != KVSpecKind::encoder_only) {
      request.block_ids[g].reserve(
          static_cast<std::size_t>(cdiv(max_tokens, groups_[g].block_size)));
    }
  }
}

int KVBlockManager::max_blocks_per_request(int max_kv_tokens, int max_step_tokens) const {
  int total = 0;
  for (const Group& group : groups_) {
    if (group.kind == KVSpecKind::encoder_only) continue;
    int blocks = cdiv(max_kv_tokens, group.block_size);
    if (group.kind == KVSpecKind::sliding_window) {
      blocks =
          std::min(blocks, cdiv(group.sliding_window - 1 + max_step_tokens, group.block_size) + 1);
    }
    total += blocks;
  }
  return total;
}

void KVBlockManager::remove_skipped_blocks(Request& request) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    if (group.kind != KVSpecKind::sliding_window) continue;
    auto& ids = request.block_ids[g];
    const int skipped_tokens = std::max(0, request.num_computed_tokens - group.sliding_window + 1);
    const auto end =
        std::min(static_cast<std::size_t>(skipped_tokens / group.block_size), ids.size());
    // Released columns form a prefix: walk back to its end so each step costs O(newly released).
    auto begin = end;
    while (begin > 0 && ids[begin - 1] != NULL_BLOCK_ID) --begin;
    for (auto column = begin; column < end; ++column) {
      pool_.free(std::span(&ids[column], 1));
      ids[column] = NULL_BLOCK_ID;
    }
  }
}

int KVBlockManager::blocks_needed(const Group& group, const std::vector<BlockId>& ids,
                                  int num_tokens) const {
  if (group.kind == KVSpecKind::encoder_only) return 0;
  return std::max(0, cdiv(num_tokens, group.block_size) - static_cast<int>(ids.size()));
}

int KVBlockManager::num_blocks_needed(const Request& request, int num_tokens) const {
  int total = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    total += blocks_needed(groups_[g], request.block_ids[g], num_tokens);
  }
  return total;
}

bool KVBlockManager::allocate_slots(Request& request, int num_tokens) {
  if (num_blocks_needed(request, num_tokens) > pool_.num_free()) return false;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto& ids = request.block_ids[g];
    pool_.allocate(blocks_needed(groups_[g], ids, num_tokens), ids);
  }
  return true;
}

void KVBlockManager::free(Request& request) {
  for (auto& ids : request.block_ids) {
    pool_.free(ids);
    ids.clear();
  }
}

void KVBlockManager::check_consistency(std::span<const Request* const> holders) const {
  pool_.check_consistency();
  struct Owner {
    const Request* request = nullptr;
    std::size_t group = 0;
  };
  std::vector<Owner> owners(static_cast<std::size_t>(pool_.num_blocks()));
  std::int64_t num_held = 0;
  for (const Request* request : holders) {
    for (std::size_t g = 0; g < request->block_ids.size(); ++g) {
      for (const BlockId id : request->block_ids[g]) {
        if (id == NULL_BLOCK_ID) continue;
        if (id < 0 || id >= pool_.num_blocks()) {
          fail("block check: request {} group {} holds block {} outside 1..{}", request->id, g, id,
               pool_.num_blocks() - 1);
        }
        Owner& owner = owners[static_cast<std::size_t>(id)];
        if (owner.request != nullptr) {
          fail("block check: block {} is held by request {} group {} and request {} group {}", id,
               owner.request->id, owner.group, request->id, g);
        }
        if (pool_.is_free(id)) {
          fail("block check: block {} is held by request {} group {} but is free", id, request->id,
               g);
        }
        owner = {request, g};
        ++num_held;
      }
    }
  }
  if (num_held + pool_.num_free() + 1 == pool_.num_blocks()) return;
  for (BlockId id = 1; id < pool_.num_blocks(); ++id) {
    if (owners[static_cast<std::size_t>(id)].request == nullptr && !pool_.is_free(id)) {
      fail("block check: block {} is neither free nor held by a request (lost)", id);
    }
  }
}

}  // namespace attnrt
