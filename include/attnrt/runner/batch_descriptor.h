#pragma once
// BatchExecutionDescriptor: the key of one captured CUDA graph and the answer of a dispatch — how
// a batch runs (runtime mode) and the padded sizes it runs at (SEMANTICS §2.1). RuntimeBatch is
// what a step asks for; is_compatible says whether a captured graph can serve it (§2.2).

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct ATTNRT_API BatchExecutionDescriptor {
  CUDAGraphMode cg_mode;                   // NONE, PIECEWISE or FULL, never a pair
  int num_tokens = 0;                      // padded token count
  std::optional<int> num_reqs;             // padded request count; none: requests not padded
  std::optional<int> uniform_token_count;  // uniform-decode graph: every request has this length
  std::optional<int> max_query_len;        // varlen-decode graph: bound on each request's length
  int num_active_loras = 0;                // a LoRA capture case
  bool exact_num_tokens = false;           // serves exactly num_tokens, never fewer
  int num_ubatches = 1;                    // micro-batches (DBO)

  // The unpadded, graph-less way to run a batch.
  static BatchExecutionDescriptor eager(int num_reqs, int num_tokens, int num_active_loras = 0,
                                        int num_ubatches = 1);

  // vLLM's repr: "BatchExecutionDescriptor(cg_mode=FULL, num_tokens=48, num_reqs=8, ...)".
  std::string describe() const;

  friend bool operator==(const BatchExecutionDescriptor&,
                         const BatchExecutionDescriptor&) = default;
};

ATTNRT_API std::ostream& operator<<(std::ostream& out, const BatchExecutionDescriptor& descriptor);

// The shape of one step's batch, as the runner knows it before padding.
struct RuntimeBatch {
  int num_reqs = 0;
  int num_tokens = 0;
  std::optional<int> uniform_token_count;  // every request has this query length (decode)
  int num_active_loras = 0;                // after LoRA case mapping
  std::optional<int> max_query_len;        // none: not tracked, so bounded graphs never match
  int num_ubatches = 1;
};

// Whether a graph captured for `captured` can run `batch` once padded to the graph's sizes.
ATTNRT_API bool is_compatible(const BatchExecutionDescriptor& captured, const RuntimeBatch& batch);

// A batch is uniform when every request has the longest query length (and there is a request).
ATTNRT_API bool is_uniform_query_len(int num_reqs, int num_tokens, int max_query_len);

// The per-request token count of a uniform decode batch, or none. A prefill chunk that happens to
// look uniform is not a decode (has_prefill).
ATTNRT_API std::optional<int> get_uniform_decode_token_count(int num_reqs, int num_tokens,
                                                             int max_query_len, bool has_prefill);

}  // namespace attnrt

template <>
struct ATTNRT_API std::hash<attnrt::BatchExecutionDescriptor> {
  std::size_t operator()(const attnrt::BatchExecutionDescriptor& descriptor) const noexcept;
};
