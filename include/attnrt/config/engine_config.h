#pragma once
// EngineConfig: everything attnrt needs to plan and run attention for one model on one rank
// (before tensor-parallel division; see ParallelConfig). Field defaults are the documented
// defaults of the JSON config (docs/config.md); `load_config` fills and validates them. Every value
// the code switches on is an enum, parsed once by the loader with its JSON path.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/config/cg_support.h"
#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/config/kv_cache_layout.h"
#include "attnrt/config/state_layer.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

// The kind of a layer. mamba and linear_attention are state layers (SEMANTICS §4.4): they keep a
// recurrent state per request, take no attention backend and share no KV cache.
enum class AttentionType {
  full,
  sliding_window,
  chunked_local,
  mla,
  cross,
  encoder_only,
  mamba,
  linear_attention
};

inline constexpr std::array<AttentionType, 8> kAllAttentionTypes = {
    AttentionType::full,  AttentionType::sliding_window,  AttentionType::chunked_local,
    AttentionType::mla,   AttentionType::cross,           AttentionType::encoder_only,
    AttentionType::mamba, AttentionType::linear_attention};
// The JSON spellings, in kAllAttentionTypes order.
inline constexpr std::array<std::string_view, 8> kAttentionTypeNames = {
    "full",  "sliding_window", "chunked_local", "mla",
    "cross", "encoder_only",   "mamba",         "linear_attention"};

ATTNRT_API std::string_view attention_type_name(AttentionType type);  // "sliding_window"
ATTNRT_API bool is_state_layer_type(AttentionType type);              // mamba or linear_attention

struct LayerConfig {
  std::string name;
  AttentionType type = AttentionType::full;
  int num_heads = 0;       // query heads (whole model, before TP division)
  int num_kv_heads = 0;    // KV heads (whole model); MLA: 1 latent "head"
  int head_size = 0;       // K head size; MLA: latent width (kv_lora_rank + rope dims, e.g. 576)
  int head_size_v = 0;     // V head size; defaults to head_size; MLA: kv_lora_rank (value width)
  int sliding_window = 0;  // sliding_window layers: tokens in the window
  int attention_chunk_size = 0;   // chunked_local layers: tokens per chunk
  std::string kv_sharing_target;  // empty: the layer owns its KV cache
  std::string backend;            // empty: the default backend for the device
  bool draft = false;             // a speculative draft layer (always after the target's layers)
  std::optional<StateLayerConfig> state;  // set exactly for mamba and linear_attention layers

  bool shares_kv() const { return !kv_sharing_target.empty(); }
  bool is_state_layer() const { return is_state_layer_type(type); }
};

struct ModelConfig {
  std::string name = "model";
  int max_model_len = 4096;
  int hidden_size = 0;
  int vocab_size = 0;
  int max_encoder_len = 1500;       // encoder tokens a cross-attention layer may attend to
  std::vector<LayerConfig> layers;  // execution order, `repeat` already expanded
};

// vLLM's --mamba-cache-mode: how many state blocks a request of a hybrid model holds. "none"
// keeps one state (plus one per draft token); "align", vLLM's prefix-caching mode, keeps two;
// "all" keeps one per attention block (not planned by attnrt: refused by validation).
enum class MambaCacheMode { none, align, all };
inline constexpr std::array<std::string_view, 3> kMambaCacheModeNames = {"none", "align", "all"};
inline constexpr std::array<MambaCacheMode, 3> kAllMambaCacheModes = {
    MambaCacheMode::none, MambaCacheMode::align, MambaCacheMode::all};

struct CacheConfig {
  int block_size = 16;        // tokens per manager block
  DType dtype = DType::bf16;  // KV cache element type
  KVCacheLayout layout = KVCacheLayout::LBNHC;
  std::uint64_t memory = 4ull << 30;  // KV cache budget per rank, bytes
  bool kv_sharing_fast_prefill = false;
  // vLLM's num_gpu_blocks_override: plan exactly this many blocks, whatever `memory` holds.
  std::optional<std::int64_t> num_gpu_blocks_override;
  // vLLM's --enable-prefix-caching and --mamba-cache-mode. Only state layers are affected here:
  // with prefix caching a "none" mode becomes "align" (vLLM's choice for models without "all"),
  // without it the mode is "none" (effective_mamba_cache_mode).
  bool enable_prefix_caching = false;
  MambaCacheMode mamba_cache_mode = MambaCacheMode::none;
};

// The mode vLLM runs with (MambaModelConfig.verify_and_update_config).
ATTNRT_API MambaCacheMode effective_mamba_cache_mode(const CacheConfig& cache);
ATTNRT_API std::string_view mamba_cache_mode_name(MambaCacheMode mode);

struct CompilationConfig {
  CUDAGraphMode cudagraph_mode = CUDAGraphMode::FULL_AND_PIECEWISE;
  std::vector<int> capture_sizes;         // empty: generated (SEMANTICS §2.3)
  std::optional<int> max_capture_size;    // unset: derived from the scheduler
  bool attention_split_piecewise = true;  // attention is a piecewise split point
};

struct SchedulerConfig {
  int max_num_seqs = 128;
  int max_num_batched_tokens = 2048;
};

struct SpeculativeConfig {
  int num_speculative_tokens = 0;
  bool enable_adaptive_verification = false;
};

struct ParallelConfig {
  int num_ubatches = 1;
  int tensor_parallel_size = 1;
};

struct LoRAConfig {
  std::vector<int> capture_cases = {0};
};

// A kernel block size a backend accepts: exactly `value`, or any multiple of it.
struct KernelBlockSizeEntry {
  int value = 0;
  bool multiple_of = false;
  friend bool operator==(const KernelBlockSizeEntry&, const KernelBlockSizeEntry&) = default;
};

// A backend declared in the config: its capabilities as data (DESIGN.md §3).
struct BackendProfileConfig {
  std::string name;
  std::string kernel;  // built-in backend that executes it; empty: plan-only
  AttentionCGSupport cudagraph_support = AttentionCGSupport::NEVER;
  std::optional<int> varlen_cudagraph_max_query_len;
  // Built-in profiles of builders that read request boundaries on device: the bound is the decode
  // query length, 1 + num_speculative_tokens (vLLM's max_decode_query_len).
  bool varlen_bound_is_decode_query_len = false;
  bool supports_device_cpu_query_lens_mismatch = true;
  bool supports_batch_invariance = false;
  std::vector<KernelBlockSizeEntry> kernel_block_sizes = {{1, true}};
  std::vector<KVCacheLayout> kv_cache_layouts;  // empty: any layout
  std::vector<AttentionType> spec_kinds;        // empty: every attention type
};

struct ATTNRT_API EngineConfig {
  ModelConfig model;
  CacheConfig cache;
  CompilationConfig compilation;
  SchedulerConfig scheduler;
  SpeculativeConfig speculative;
  ParallelConfig parallel;
  LoRAConfig lora;
  std::vector<BackendProfileConfig> backends;

  const LayerConfig* find_layer(std::string_view name) const;
};

}  // namespace attnrt
