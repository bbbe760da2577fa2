// Request: status names and block counting.

#include "attnrt/engine/request.h"

#include <algorithm>

namespace attnrt {

std::string_view request_status_name(RequestStatus status) {
  switch (status) {
    case RequestStatus::waiting:
      return "waiting";
    case RequestStatus::running:
      return "running";
    case RequestStatus::preempted:
      return "preempted";
    case RequestStatus::finished:
      return "finished";
  }
  return "unknown";
}

int Request::num_owned_blocks(int group) const {
  const auto& ids = block_ids[static_cast<std::size_t>(group)];
  return static_cast<int>(
      std::count_if(ids.begin(), ids.end(), [](BlockId block) { return block != NULL_BLOCK_ID; }));
}

}  // namespace attnrt
