#pragma once
// The placement records of a KV cache plan (SEMANTICS §4.2): groups of layers sharing a spec and
// a block table, the number of manager blocks, and where each group's layers live in the backing.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attnrt/config/kv_cache_layout.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_spec.h"

namespace attnrt {

// One group's layers in the shared backing allocation. Layer l's page for manager block b starts
// at `offset + l * layer_stride + b * block_stride` (bytes). Groups overlay each other: a block
// id belongs to one group at a time, so layer slot l of every group uses the same bytes.
struct KVCacheTensor {
  std::uint64_t size = 0;           // bytes of the backing allocation (the same for every tensor)
  std::vector<std::string> layers;  // in L order
  std::int64_t layer_stride = 0;
  std::int64_t block_stride = 0;
  std::int64_t offset = 0;
};

struct KVCacheGroupSpec {
  std::vector<std::string> layer_names;  // execution order; KV-sharing layers appended later
  KVCacheSpec kv_cache_spec;
};

struct ATTNRT_API KVCacheConfig {
  std::int64_t num_blocks = 0;
  std::vector<KVCacheTensor> kv_cache_tensors;  // one per group with layers, in group order
  std::vector<KVCacheGroupSpec> kv_cache_groups;
  KVCacheLayout kv_cache_layout = KVCacheLayout::LBNHC;
  int layer_slots = 0;  // layers per group slot: the L extent of the backing

  std::uint64_t backing_bytes() const {
    return kv_cache_tensors.empty() ? 0 : kv_cache_tensors.front().size;
  }
  // Index of the first group holding `layer`, or -1. A linear scan: for one lookup only; code
  // that looks up every layer builds a KVCacheGroupIndex once.
  int group_of(std::string_view layer) const;
};

// Layer name → id of the first group holding it, built once so that looking up every layer of a
// 100 000-layer plan stays linear. It views the groups' names without copying them: use it only
// while `groups` lives and its layer names do not change.
class ATTNRT_API KVCacheGroupIndex {
 public:
  explicit KVCacheGroupIndex(std::span<const KVCacheGroupSpec> groups);

  int group_of(std::string_view layer) const;  // -1 when no group holds it

 private:
  std::unordered_map<std::string_view, int> group_of_layer_;
};

}  // namespace attnrt
