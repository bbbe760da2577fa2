#pragma once
// CUDA-graph mode resolution (SEMANTICS §1.3): the configured mode, downgraded to what the weakest
// attention backend supports, with vLLM's warning texts; and the adaptive-verification pre-step.

#include <optional>
#include <string>
#include <vector>

#include "attnrt/config/cg_support.h"
#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct CUDAGraphModeResolution {
  CUDAGraphMode mode;                 // the mode to capture and dispatch with
  std::vector<std::string> messages;  // every downgrade, in the order applied (vLLM's warnings)
};

// vLLM's `resolve_cudagraph_mode_and_sizes` rules 0–4 for the model runner v2, then a final
// normalisation when piecewise capture is unavailable. Throws Error with vLLM's ValueError texts
// when FULL graphs are requested from a backend that supports none. `min_cg_attn_backend` is the
// backend that limits support; absent, messages say "None backend", as vLLM does.
ATTNRT_API CUDAGraphModeResolution resolve_cudagraph_mode(
    CUDAGraphMode requested, AttentionCGSupport min_cg_support,
    const std::optional<std::string>& min_cg_attn_backend, int uniform_decode_query_len = 1,
    bool attention_split_piecewise = true, bool piecewise_capture_available = true);

// Adaptive verification needs FULL decode graphs plus a mixed routine it can fall back to:
// FULL becomes FULL_AND_PIECEWISE (or FULL_DECODE_ONLY without piecewise capture), as does
// FULL_AND_PIECEWISE; FULL_DECODE_ONLY, NONE and PIECEWISE are returned unchanged. Runs before
// resolve_cudagraph_mode when adaptive verification is on.
ATTNRT_API CUDAGraphMode resolve_adaptive_cudagraph_mode(CUDAGraphMode mode,
                                                         bool piecewise_capture_available);

}  // namespace attnrt
