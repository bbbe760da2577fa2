#pragma once
// The attention plan of a config, as `attnrt plan` explains it and an engine starts from: the KV
// cache plan, the backends and attention groups (init_attn_backend), the CUDA-graph mode that is
// safe and which backend limits it, the fast-prefill layers, and the target-scoped checks of
// speculative decoding. Nothing is allocated.

#include <optional>
#include <set>
#include <string>

#include "attnrt/attention/backend_registry.h"
#include "attnrt/core/export.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/capture_sizes.h"
#include "attnrt/runner/cudagraph_resolution.h"
#include "attnrt/runner/kv_cache_plan.h"
#include "attnrt/runner/startup_verdict.h"

namespace attnrt {

struct SpeculativeChecks {
  int varlen_query_len = 1;  // 1 + num_speculative_tokens
  std::optional<std::string> query_lens_mismatch_unsupported_backend;
  std::optional<VarlenUnsupportedBackend> varlen_cudagraph_unsupported_backend;
};

struct AttentionPlan {
  KVCachePlan kv;                  // views use the kernel block sizes below
  InitAttnBackendResult backends;  // attention groups, runner-wide CG support, kernel sizes
  CUDAGraphMode requested_mode;
  CUDAGraphModeResolution cudagraph;
  CaptureSizes capture_sizes;
  std::set<std::string> draft_layers;
  std::set<std::string> fast_prefill_layers;
  SpeculativeChecks checks;  // over the target (non-draft) layers only
  StartupVerdict startup;    // would vLLM start? (its refusals, not thrown)
};

// Plans `config` with the backends of `registry` (built-in, GPU profiles, config profiles).
// Throws Error for anything the config cannot run with (unknown backend, no common kernel block
// size, a FULL mode with a NEVER backend, ...). Where vLLM would plan and then refuse to start
// (one max-length request does not fit, too few Mamba blocks for FULL graphs), the plan is
// returned with the refusals in `startup`.
ATTNRT_API AttentionPlan plan_attention(const EngineConfig& config, const BackendRegistry& registry,
                                        Device device = Device::cpu());

}  // namespace attnrt
