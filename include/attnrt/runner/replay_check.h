#pragma once
// The replay-side check (attnrt's addition to vLLM): before a batch runs under a descriptor,
// verify that the graph captured for it can serve the batch, instead of replaying a graph whose
// buffers, request count or kernel shape do not match. A few comparisons: cheap enough to stay on
// in release builds.

#include "attnrt/core/export.h"
#include "attnrt/runner/batch_descriptor.h"

namespace attnrt {

// Throws Error naming the first mismatch and the fix when `batch` does not fit `descriptor`:
// more tokens than it holds (or not exactly as many, for an exact graph), more requests than it
// was padded for, a query length other than a uniform graph's, a longer query than a varlen
// graph's bound, more active LoRA adapters than its LoRA case, or another micro-batch count.
// `batch.num_active_loras` is the number of active adapters (a graph of case n serves up to n).
ATTNRT_API void check_batch_fits(const BatchExecutionDescriptor& descriptor,
                                 const RuntimeBatch& batch);

}  // namespace attnrt
