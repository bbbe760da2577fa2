#pragma once
// CPU_FLASH: the fast CPU backend. Tiled online-softmax attention over the paged KV cache with
// split-KV for long contexts, GQA groups served from one pass over each K/V tile, SIMD through
// Highway (runtime dispatch: AVX-512, AVX2, NEON, ...) and OpenMP threads over requests × KV heads
// × query tiles × key splits. Same semantics as CPU_REFERENCE (its oracle); fp32 accumulation.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/core/export.h"

namespace attnrt {

// How bf16 caches are multiplied on CPUs with AVX512-BF16: in bf16 (decode on AVX512-BF16 dot
// products, prefill on AMX-BF16 tiles where the CPU has them, else on dot products too) or in f32.
// Every choice is a function of the CPU's features and the request, never of a timing, so one
// machine gives the same numbers (and tokens) on every run (docs/cpu-flash.md §5).
enum class Bf16Products : std::uint8_t {
  automatic,  // "auto": what the CPU's features call for (docs/cpu-flash.md §5)
  dot,        // bf16 products on bf16-rounded queries and softmax weights (twice the MACs per
              // instruction; AMX: a 16 x 16 x 32 tile per instruction), wherever the CPU has them
  f32,        // every product in f32, as CPU_REFERENCE computes
};
// "auto", "dot", "f32": the spelling of the CLI's --bf16-products and of reports.
ATTNRT_API std::string_view bf16_products_name(Bf16Products products);
// The value spelled `name`, or nullopt.
ATTNRT_API std::optional<Bf16Products> bf16_products_from_name(std::string_view name);
// The error bound of dot products against f32 products, relative to max(1, |output|): the
// query rows and the softmax weights are rounded to bf16 (2^-9 relative each); observed 1.3e-3
// over 800 random batches.
inline constexpr double kBf16DotTolerance = 5e-3;

// What a backend chose for bf16 caches, and why (one line, shown by `attnrt plan` and `run`).
struct Bf16ProductsChoice {
  bool dot_products = false;  // decode-like (GEMV) items: AVX512-BF16 dot products
  bool prefill_bf16 = false;  // prefill (GEMM) items: AMX-BF16 tiles, else dot products
  std::string reason;
};

// The one set of CPU_FLASH defaults: each call's work plan takes its policy from these.
struct CpuFlashOptions {
  static constexpr int kMaxSplits = 64;  // what the merge step combines; max_splits is capped to it
  int num_threads = 0;       // 0: OMP_NUM_THREADS if set, else every processor the process may use
  int min_split_keys = 256;  // a key split covers at least this many keys
  int max_splits = 32;       // key splits per request at most (<= kMaxSplits)
  std::size_t partial_bytes = 16u << 20;  // workspace for split partial results
  // bf16 caches: decode (GEMV items), and prefill (GEMM items) unless bf16_prefill_products says
  // otherwise.
  Bf16Products bf16_products = Bf16Products::automatic;
  std::optional<Bf16Products> bf16_prefill_products = std::nullopt;
  // Whether the GQA four-row decode prefetches each next step into L2; unset: where that was
  // measured to help (AMD before Zen 5, docs/cpu-flash.md §6). Either way the results agree.
  std::optional<bool> stream_prefetch = std::nullopt;
};

class ATTNRT_API CpuFlashBackend : public AttentionBackend {
 public:
  explicit CpuFlashBackend(CpuFlashOptions options = {});

  std::string name() const override { return "CPU_FLASH"; }
  // Everything CPU_REFERENCE serves: full, sliding-window, chunked-local, MLA and cross.
  bool supports_spec_kind(KVSpecKind kind) const override;
  // Any width (scalar tails), up to the int offsets of its per-thread tiles of 128 rows.
  bool supports_head_size(int head_size) const override { return head_size <= kMaxHeadSize; }
  static constexpr int kMaxHeadSize = 8388607;  // INT_MAX / 256
  // The kernels walk the block table per key, so any kernel block size works: [MultipleOf(1)].
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(
      const KVCacheSpec& spec) const override;
  // Any layout whose content axis is innermost (all six); page-contiguous ones first.
  std::vector<KVCacheLayout> supported_kv_cache_layouts() const override;
  // Request boundaries are read from the device arrays only.
  bool supports_device_cpu_query_lens_mismatch() const override { return true; }
  // Key splits depend on the whole batch (they fill the threads), so a request's rounding does.
  bool supports_batch_invariance() const override { return false; }

  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& kv_cache_spec,
                                                           std::vector<std::string> layer_names,
                                                           const EngineConfig& config,
                                                           Device device) const override;

  void write_kv(const KVWriteArgs& args) const override;
  void forward(const AttentionForwardArgs& args) const override;

  const CpuFlashOptions& options() const { return options_; }
  int num_threads() const { return num_threads_; }
  // Made from options().bf16_products and the CPU's features at the first question; the kernels
  // use dot products only while the dispatched SIMD target has them too. Thread-safe.
  const Bf16ProductsChoice& bf16_products() const;
  // Whether this backend's bf16 caches run decode on AVX512-BF16 dot products: chosen, and the
  // dispatched target and the CPU have them.
  bool runs_bf16_dot_products() const;
  // Whether they run prefill on bf16 products (AMX-BF16 tiles or dot products): chosen, and the
  // dispatched target, the CPU and the OS permit them.
  bool runs_bf16_prefill_products() const;
  // Either: some products round queries and softmax weights to bf16 (kBf16DotTolerance).
  bool rounds_bf16_products() const {
    return runs_bf16_dot_products() || runs_bf16_prefill_products();
  }

 private:
  struct LazyBf16Choice;  // once_flag and choice; shared by copies, which ask the same question

  CpuFlashOptions options_;
  int num_threads_ = 1;
  std::shared_ptr<LazyBf16Choice> bf16_choice_;
};

// The step's CommonAttentionMetadata plus the shared workspace the kernels carve their per-thread
// tiles, plan and split partials from, so a forward call allocates nothing.
struct ATTNRT_API CpuFlashMetadata : AttentionMetadata {
  std::unique_ptr<AttentionMetadata> clone() const override {
    return std::make_unique<CpuFlashMetadata>(*this);
  }
  std::shared_ptr<Buffer> workspace;
};

// The kernels plan their work at forward time from the device arrays (query_start_loc, seq_lens,
// encoder_seq_lens, block table) and use num_reqs / num_actual_tokens only as bounds, so a FULL
// graph replay (frozen scalars, refreshed arrays) computes exactly what an eager call does.
class ATTNRT_API CpuFlashMetadataBuilder : public AttentionMetadataBuilder {
 public:
  CpuFlashMetadataBuilder(const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
                          const EngineConfig& config, Device device, const CpuFlashOptions& options,
                          int num_threads);

  // ALWAYS: mixed prefill/decode batches replay correctly (see the class comment).
  AttentionCGSupport get_cudagraph_support(const EngineConfig& config,
                                           const KVCacheSpec& spec) const override;
  // nullopt: an ALWAYS builder needs no varlen bound.
  std::optional<int> get_varlen_cudagraph_max_query_len(const EngineConfig& config,
                                                        const KVCacheSpec& spec) const override;

  const AttentionMetadata& build(int common_prefix_len, const CommonAttentionMetadata& common,
                                 bool fast_build = false) override;

  // Sized for every layer of the config, so the builders of other groups can share it.
  std::shared_ptr<Buffer> provide_workspace(const EngineConfig& config) override;
  bool accepts_workspace() const override { return true; }
  // Keeps a shared workspace only if it is large enough for this group's layers.
  void set_workspace_buffer(std::shared_ptr<Buffer> workspace) override;

  std::size_t workspace_bytes() const { return own_bytes_; }

 private:
  CpuFlashOptions options_;
  int num_threads_ = 1;
  std::size_t own_bytes_ = 0;     // what this group's layers need
  std::size_t config_bytes_ = 0;  // what every layer of the config needs
  std::shared_ptr<Buffer> workspace_;
  CpuFlashMetadata metadata_;
};

// The backend object the built-in registry holds.
ATTNRT_API AttentionBackendPtr make_cpu_flash_backend();
ATTNRT_API AttentionBackendPtr make_cpu_flash_backend(const CpuFlashOptions& options);

}  // namespace attnrt
