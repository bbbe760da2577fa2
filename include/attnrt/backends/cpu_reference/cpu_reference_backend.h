#pragma once
// CPU_REFERENCE: the oracle backend. Plain loops with fp32 accumulation over the paged KV cache, in
// any layout and kernel block size; every faster kernel is tested against it, so it favours
// clarity over speed. Serves full, sliding-window, chunked-local, MLA and cross attention;
// encoder-only attention is refused (the kernel interface passes no keys for uncached attention).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API CpuReferenceBackend : public AttentionBackend {
 public:
  std::string name() const override { return "CPU_REFERENCE"; }
  bool supports_spec_kind(KVSpecKind kind) const override;
  // Plain loops address any kernel block size and any stride order: [MultipleOf(1)], any layout.
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(
      const KVCacheSpec& spec) const override;
  std::vector<KVCacheLayout> supported_kv_cache_layouts() const override { return {}; }
  // Request boundaries come from the device arrays only, never from their host copies.
  bool supports_device_cpu_query_lens_mismatch() const override { return true; }
  // Each output row depends only on its own query row and its request's keys, summed in
  // ascending key order with no batch-dependent split or tiling, so a request's result does not
  // depend on what else is in the batch.
  bool supports_batch_invariance() const override { return true; }

  // Throws Error for specs it cannot address (compressed states, encoder-only).
  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& kv_cache_spec,
                                                           std::vector<std::string> layer_names,
                                                           const EngineConfig& config,
                                                           Device device) const override;

  // Rounds K and V (MLA: the latent) to the cache dtype; PAD_SLOT_ID tokens are skipped. Throws
  // Error naming the token of an out-of-range slot before writing anything.
  void write_kv(const KVWriteArgs& args) const override;
  // Reads requests only from query_start_loc / seq_lens (device arrays). Query position p sees
  // keys [0, p] (full, MLA), [p - W + 1, p] (sliding window W, vLLM's convention), its chunk up
  // to p (chunked local), or all encoder_seq_lens[r] keys (cross; seq_lens[r] when
  // encoder_seq_lens is empty); with metadata.causal false, full and MLA layers see all seq_len
  // keys. Output rows from query_start_loc[num_reqs] to num_actual_tokens (graph padding) are
  // zeroed.
  void forward(const AttentionForwardArgs& args) const override;
};

// Keeps the step's CommonAttentionMetadata as the backend metadata: the kernels derive every
// request's extent from its arrays, which is what makes FULL graph replays (frozen scalars,
// refreshed arrays) correct for any batch.
class ATTNRT_API CpuReferenceMetadataBuilder : public AttentionMetadataBuilder {
 public:
  using AttentionMetadataBuilder::AttentionMetadataBuilder;

  // ALWAYS: mixed prefill/decode batches replay correctly because the kernels use the frozen
  // scalars only as loop bounds that tolerate padded, zero-length requests.
  AttentionCGSupport get_cudagraph_support(const EngineConfig& config,
                                           const KVCacheSpec& spec) const override;
  // nullopt: an ALWAYS builder needs no varlen bound (SEMANTICS §7.4 passes it unconditionally).
  std::optional<int> get_varlen_cudagraph_max_query_len(const EngineConfig& config,
                                                        const KVCacheSpec& spec) const override;

  // Copies `common` (spans only, no allocation) into the builder-owned metadata and returns it.
  const AttentionMetadata& build(int common_prefix_len, const CommonAttentionMetadata& common,
                                 bool fast_build = false) override;

 private:
  AttentionMetadata metadata_;
};

// The backend object the built-in registry holds.
ATTNRT_API AttentionBackendPtr make_cpu_reference_backend();

}  // namespace attnrt
