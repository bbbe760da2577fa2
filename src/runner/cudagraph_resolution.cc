// resolve_cudagraph_mode: vLLM's attention-driven downgrades, rule by rule (SEMANTICS §1.3).
//
// attnrt assumes the compilation mode is VLLM_COMPILE, so whether attention is a piecewise split
// point (`attention_split_piecewise`, which also stands for inductor graph partitioning) alone
// decides rule 2. Two of vLLM's rules are not applied here:
//  - rule 5 (rounding capture sizes to multiples of the decode query length) belongs to the v1
//    model runner; attnrt's CudaGraphManager sizes its uniform-decode graphs itself, as MRV2 does;
//  - rule 6 (Mamba cache blocks per decode sequence) needs Mamba specs, out of scope (§0).

#include "attnrt/runner/cudagraph_resolution.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "core/fail.h"

namespace attnrt {
namespace {

struct Inputs {
  AttentionCGSupport support;
  std::string backend;  // "None" when unknown
  int uniform_decode_query_len;
  bool attention_split_piecewise;
};

std::string not_supported(CUDAGraphMode mode, const Inputs& in) {
  return fmt::format("{} is not supported with {} backend (support: {})", mode.qualified_name(),
                     in.backend, cg_support_qualified_name(in.support));
}

// Rule 1: a FULL mixed routine needs ALWAYS; otherwise keep FULL for decode only.
void check_mixed_full(CUDAGraphModeResolution& r, const Inputs& in) {
  if (r.mode.mixed_mode() != CUDAGraphMode::FULL || in.support == AttentionCGSupport::ALWAYS) {
    return;
  }
  std::string message = not_supported(r.mode, in);
  if (in.support == AttentionCGSupport::NEVER) {
    throw Error(message +
                "; please try cudagraph_mode=PIECEWISE, and make sure compilation mode is "
                "VLLM_COMPILE");
  }
  if (in.attention_split_piecewise) {
    r.mode = CUDAGraphMode::FULL_AND_PIECEWISE;
    message += "; setting cudagraph_mode=FULL_AND_PIECEWISE";
  } else {
    r.mode = CUDAGraphMode::FULL_DECODE_ONLY;
    message += "; setting cudagraph_mode=FULL_DECODE_ONLY";
  }
  r.messages.push_back(std::move(message));
}

// Rule 2: FULL decode graphs need some FULL support.
void check_decode_full(CUDAGraphModeResolution& r, const Inputs& in) {
  if (r.mode.decode_mode() != CUDAGraphMode::FULL || in.support != AttentionCGSupport::NEVER) {
    return;
  }
  std::string message = not_supported(r.mode, in);
  if (in.attention_split_piecewise) {
    r.mode = CUDAGraphMode::PIECEWISE;
    message += "; setting cudagraph_mode=PIECEWISE because attention is compiled piecewise";
  } else {
    r.mode = CUDAGraphMode::NONE;
    message += "; setting cudagraph_mode=NONE because attention is not compiled piecewise";
  }
  r.messages.push_back(std::move(message));
}

// Rule 3: spec-decode verification (1+k tokens per request) needs UNIFORM_BATCH.
void check_spec_decode(CUDAGraphModeResolution& r, const Inputs& in) {
  if (r.mode.decode_mode() != CUDAGraphMode::FULL || in.uniform_decode_query_len <= 1 ||
      !weaker(in.support, AttentionCGSupport::UNIFORM_BATCH)) {
    return;
  }
  std::string message =
      fmt::format("{} is not supported with spec-decode for attention backend {} (support: {})",
                  r.mode.qualified_name(), in.backend, cg_support_qualified_name(in.support));
  if (in.attention_split_piecewise) {
    r.mode = CUDAGraphMode::PIECEWISE;
    message += "; setting cudagraph_mode=PIECEWISE";
  } else {
    r.mode = CUDAGraphMode::NONE;
    message += "; setting cudagraph_mode=NONE";
  }
  r.messages.push_back(std::move(message));
}

// Rule 4: unreachable after rules 1–2, kept as vLLM keeps it (its text differs in spacing).
void recheck_full(const CUDAGraphModeResolution& r, const Inputs& in) {
  if (!r.mode.has_full_cudagraphs() || in.support != AttentionCGSupport::NEVER) return;
  fail(
      "{} is not supported with {} backend (support:{}) ; please try cudagraph_mode=PIECEWISE, "
      "and make sure compilation mode is VLLM_COMPILE",
      r.mode.qualified_name(), in.backend, cg_support_qualified_name(in.support));
}

// Without piecewise capture (no compiled submodule, no breakable graphs) PIECEWISE graphs
// cannot be recorded: drop them and keep what FULL graphs remain.
void drop_piecewise(CUDAGraphModeResolution& r) {
  if (!r.mode.has_piecewise_cudagraphs()) return;
  const CUDAGraphMode fallback = r.mode == CUDAGraphMode::FULL_AND_PIECEWISE
                                     ? CUDAGraphMode::FULL_DECODE_ONLY
                                     : CUDAGraphMode::NONE;
  r.messages.push_back(fmt::format(
      "{} needs piecewise CUDA graph capture, which is unavailable (no compiled submodule and "
      "breakable CUDA graphs are off); setting cudagraph_mode={}",
      r.mode.qualified_name(), fallback.name()));
  r.mode = fallback;
}

}  // namespace

CUDAGraphModeResolution resolve_cudagraph_mode(
    CUDAGraphMode requested, AttentionCGSupport min_cg_support,
    const std::optional<std::string>& min_cg_attn_backend, int uniform_decode_query_len,
    bool attention_split_piecewise, bool piecewise_capture_available) {
  if (uniform_decode_query_len < 1) {
    fail("uniform_decode_query_len must be at least 1 (got {}); it is 1 + num_speculative_tokens",
         uniform_decode_query_len);
  }
  CUDAGraphModeResolution result{requested, {}};
  if (!requested) return result;  // rule 0
  const Inputs inputs{min_cg_support, min_cg_attn_backend.value_or("None"),
                      uniform_decode_query_len, attention_split_piecewise};
  check_mixed_full(result, inputs);
  check_decode_full(result, inputs);
  check_spec_decode(result, inputs);
  recheck_full(result, inputs);
  if (!piecewise_capture_available) drop_piecewise(result);
  return result;
}

CUDAGraphMode resolve_adaptive_cudagraph_mode(CUDAGraphMode mode,
                                              bool piecewise_capture_available) {
  if (mode != CUDAGraphMode::FULL && mode != CUDAGraphMode::FULL_AND_PIECEWISE) return mode;
  return piecewise_capture_available ? CUDAGraphMode::FULL_AND_PIECEWISE
                                     : CUDAGraphMode::FULL_DECODE_ONLY;
}

}  // namespace attnrt
