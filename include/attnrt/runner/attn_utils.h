#pragma once
// attnrt's counterpart of vLLM's model-runner module `attn_utils` (reference page:
// spec/attn_utils_reference.txt). Names and parameters follow the page in C++ form.

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/forward_context.h"
#include "attnrt/config/cg_support.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/device.h"
#include "attnrt/core/export.h"
#include "attnrt/core/tensor.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/runner/attention_group.h"

namespace attnrt {

// The weakest CUDA-graph support of the attention groups, and the backend that limits it
// (SEMANTICS §7.1).
struct ATTNRT_API AttentionCGSupportInfo {
  AttentionCGSupport min_cg_support = AttentionCGSupport::ALWAYS;
  std::optional<std::string> min_cg_attn_backend;

  // This info tightened by `support` if it is strictly weaker; on a tie the existing backend
  // stays. Lets groups built outside init_attn_backend (encoder-only layers) take part.
  AttentionCGSupportInfo narrow(AttentionCGSupport support, std::string backend) const;

  friend bool operator==(const AttentionCGSupportInfo&, const AttentionCGSupportInfo&) = default;
};

// The weakest support reported by builder 0 of every attention group (first weakest wins), over
// the groups sharing a name with `checked_layer_names` when given (SEMANTICS §7.2).
ATTNRT_API AttentionCGSupportInfo get_attn_cg_support(
    std::span<const std::vector<AttentionGroup>> attn_groups, const EngineConfig& config,
    const std::set<std::string>* checked_layer_names = nullptr);

// The name of the first backend (of the checked groups) that needs the CPU query lengths to equal
// the device ones, which adaptive verification breaks; nullopt if none (SEMANTICS §7.3).
ATTNRT_API std::optional<std::string> get_query_lens_mismatch_unsupported_backend(
    std::span<const std::vector<AttentionGroup>> attn_groups,
    const std::set<std::string>* checked_layer_names = nullptr);

struct VarlenUnsupportedBackend {
  std::string backend;
  std::optional<int> bound;  // its varlen bound; nullopt: it replays no varlen batch at all
  friend bool operator==(const VarlenUnsupportedBackend&,
                         const VarlenUnsupportedBackend&) = default;
};

// The first backend whose FULL graphs cannot replay decode batches of 1 to `max_query_len` tokens
// per request, with its bound (SEMANTICS §7.4): ALWAYS builders pass, NEVER builders fail with no
// bound, others need a bound of at least `max_query_len`. nullopt if every checked group passes.
ATTNRT_API std::optional<VarlenUnsupportedBackend> get_varlen_cudagraph_unsupported_backend(
    std::span<const std::vector<AttentionGroup>> attn_groups, const EngineConfig& config,
    int max_query_len, const std::set<std::string>* checked_layer_names = nullptr);

// The trailing run of KV-sharing layers in execution order, skipping `draft_layer_names`; empty
// when `config.cache.kv_sharing_fast_prefill` is off (SEMANTICS §7.6).
ATTNRT_API std::set<std::string> get_kv_sharing_fast_prefill_eligible_layers(
    const EngineConfig& config, const ForwardContext& forward_context,
    const std::set<std::string>* draft_layer_names = nullptr);

struct InitAttnBackendResult {
  std::vector<std::vector<AttentionGroup>> attn_groups;  // one list per KV cache group
  AttentionCGSupportInfo cg_support;
  std::vector<int> kernel_block_sizes;  // one per KV cache group
};

// The optional inputs of init_attn_backend, named as on the reference page where it has them.
struct InitAttnBackendOptions {
  // Only these layers (group order kept); nullptr: every layer.
  const std::set<std::string>* active_layer_names = nullptr;
  // Excluded from fast prefill.
  const std::set<std::string>* draft_layer_names = nullptr;
  // The caller translates every slot mapping into kernel slots; otherwise only groups holding a
  // layer of `slot_mapped_layers` receive translated ones.
  bool maps_slot_mapping = false;
  std::set<std::string> slot_mapped_layers;
  // Every backend must support batch invariance (vLLM reads VLLM_BATCH_INVARIANT).
  bool batch_invariant = false;
};

// Discovers the attention groups of every KV cache group, picks kernel block sizes and creates
// one builder per micro-batch for each group (SEMANTICS §7.7, with attnrt's choices of §0):
// - adds KV-sharing layers to their target's group (`kv_cache_config` is modified) unless a plan
//   already did;
// - serves the fast-prefill eligible layers with the FastPrefill wrapper of their backend;
// - a group whose blocks need translation but whose slot mappings arrive untranslated (see
//   `options.maps_slot_mapping`) is an Error, as is a batch-variant backend under
//   `options.batch_invariant`, checked before any builder exists.
// Backends come from each layer's get_attn_backend(). The builders keep no reference to
// `config`.
ATTNRT_API InitAttnBackendResult init_attn_backend(KVCacheConfig& kv_cache_config,
                                                   const EngineConfig& config,
                                                   const ForwardContext& forward_context,
                                                   Device device,
                                                   const InitAttnBackendOptions& options = {});

// Binds per-layer KV cache views to the attention layers (SEMANTICS §0): every KV-sharing layer's
// entry becomes its target's view, then each layer of the forward context with an entry is bound
// in execution order. Entries for names outside the context stay in the map, unbound. When
// `attn_groups` is given, every layer they name must end up bound. Validates everything before
// changing anything: on error neither the map nor any layer is modified.
ATTNRT_API void bind_kv_caches(std::map<std::string, Tensor>& kv_caches,
                               ForwardContext& forward_context,
                               const KVCacheConfig& kv_cache_config, const EngineConfig& config,
                               std::span<const std::vector<AttentionGroup>> attn_groups = {});

}  // namespace attnrt
