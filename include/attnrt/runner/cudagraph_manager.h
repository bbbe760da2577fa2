#pragma once
// CudaGraphManager: decides which CUDA graphs to capture for a resolved mode and, each step, which
// captured graph serves the batch and the padded sizes to run it at (SEMANTICS §2.5, §2.6; vLLM's
// MRV2 cudagraph_utils). It records no graphs itself: the runner captures, then calls
// mark_captured(); until then every dispatch is eager and unpadded.

#include <optional>
#include <set>
#include <vector>

#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/runner/batch_descriptor.h"
#include "attnrt/runner/capture_sizes.h"

namespace attnrt {

struct ATTNRT_API CudaGraphManagerOptions {
  CUDAGraphMode mode;                   // resolved (resolve_cudagraph_mode)
  std::vector<int> capture_sizes;       // token counts (compute_capture_sizes)
  std::optional<int> max_capture_size;  // none: the largest capture size
  int max_num_reqs = 1;                 // scheduler max_num_seqs
  int decode_query_len = 1;             // 1 + speculative tokens per request
  std::vector<int> lora_capture_cases = {0};
  bool varlen_decode = false;  // adaptive verification: bounded-length decode graphs
  std::optional<std::set<int>> full_capture_request_sizes;  // uniform graphs only for these
  bool specialize_full_decode = false;    // FULL mode: extra uniform-decode graphs
  int single_request_prefill_tokens = 0;  // > 0 with breakable graphs: one exact prefill graph
  bool breakable_cudagraphs = false;      // piecewise graphs recorded as breakable CUDA graphs

  // Sizes, limits, speculative width, LoRA cases and varlen decode (= adaptive verification)
  // from the config; the other options keep their defaults.
  static CudaGraphManagerOptions from_config(const EngineConfig& config,
                                             CUDAGraphMode resolved_mode);
};

class ATTNRT_API CudaGraphManager {
 public:
  // Throws Error on limits below 1 or negative sizes and LoRA cases.
  explicit CudaGraphManager(CudaGraphManagerOptions options);
  CudaGraphManager(const EngineConfig& config, CUDAGraphMode resolved_mode);

  const CudaGraphManagerOptions& options() const { return options_; }
  CUDAGraphMode mode() const { return options_.mode; }

  // Everything to capture, in capture order: PIECEWISE graphs first (their activations are the
  // largest), then FULL; largest token count first within each.
  std::vector<BatchExecutionDescriptor> capture_descriptors() const;
  // The descriptors of one runtime mode (PIECEWISE or FULL), largest token count first.
  std::vector<BatchExecutionDescriptor> capture_descriptors(CUDAGraphMode runtime_mode) const;

  // The runner has captured every descriptor; dispatch may now answer with graphs.
  void mark_captured() { captured_ = true; }
  bool captured() const { return captured_; }

  // The captured LoRA case that serves `num_active_loras` adapters (§2.4).
  int lora_case(int num_active_loras) const { return lora_map_.map(num_active_loras); }

  // The graphs dispatch tries, in order, for `num_tokens` tokens: every FULL graph at least that
  // large (nearest first), then every such PIECEWISE graph. Ignores whether capture is done.
  std::vector<BatchExecutionDescriptor> candidates(int num_tokens, int num_active_loras) const;

  // The first candidate compatible with the batch (§2.2), or an eager descriptor (NONE, unpadded)
  // before capture, above the largest graph, or when none fits. The result's num_tokens (and
  // num_reqs, when set) are the sizes the runner pads the batch to.
  BatchExecutionDescriptor dispatch(int num_reqs, int num_tokens,
                                    std::optional<int> uniform_token_count,
                                    int num_active_loras = 0,
                                    std::optional<int> max_query_len = std::nullopt,
                                    int num_ubatches = 1) const;

 private:
  // One LoRA case's graphs in candidate order: ascending token count, then uniform-specific,
  // bounded-varlen, request-padded (fewest requests first), unpadded requests last.
  struct CaseCandidates {
    int num_active_loras = 0;
    std::vector<BatchExecutionDescriptor> full;
    std::vector<BatchExecutionDescriptor> piecewise;
  };

  const CaseCandidates* find_case(int num_active_loras) const;

  CudaGraphManagerOptions options_;
  LoRACaseMap lora_map_;
  std::vector<BatchExecutionDescriptor> descriptors_;  // creation order
  std::vector<CaseCandidates> candidates_;             // one per LoRA case, ascending
  bool captured_ = false;
};

}  // namespace attnrt
