#pragma once
// AttentionGroup: layers of one KV cache group that share a backend, a spec and a query-head count,
// and therefore one metadata builder per micro-batch (SEMANTICS §3.1).

#include <memory>
#include <string>
#include <vector>

#include "attnrt/kv/kv_cache_spec.h"

namespace attnrt {

class AttentionBackend;

struct AttentionGroup {
  std::shared_ptr<const AttentionBackend> backend;
  std::vector<std::string> layer_names;  // discovery order
  KVCacheSpec kv_cache_spec;
  int kv_cache_group_id = 0;
};

}  // namespace attnrt
