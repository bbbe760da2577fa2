#pragma once
// AttentionBackend: an object describing one attention implementation — its name, grouping key,
// capabilities, metadata builder — and its kernel entry points (SEMANTICS §5.1, DESIGN.md §3).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/attention/kernel_block_size.h"
#include "attnrt/config/kv_cache_layout.h"
#include "attnrt/core/export.h"
#include "attnrt/core/tensor.h"

namespace attnrt {

// The per-rank attention shape of a layer, as its kernels need it.
struct AttentionShape {
  AttentionType type = AttentionType::full;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_size = 0;    // Q/K width; MLA: the latent width
  int head_size_v = 0;  // V/output width; MLA: kv_lora_rank (the latent's first entries)
  int sliding_window = 0;
  int attention_chunk_size = 0;
  float scale = 0.f;  // softmax scale; 0: 1/sqrt(head_size)
};

// Rows of f32 activations: row t, head h starts at data + t*token_stride + h*head_stride.
struct ActivationView {
  float* data = nullptr;
  int num_tokens = 0;
  int num_heads = 0;
  int head_size = 0;
  std::int64_t token_stride = 0;
  std::int64_t head_stride = 0;

  float* row(int token, int head) const { return data + token * token_stride + head * head_stride; }
};

// Writes this step's K and V (MLA: the latent, passed as `key`) into the cache at `slot_mapping`
// (kernel slots; PAD_SLOT_ID skipped), converting to the cache dtype.
struct KVWriteArgs {
  const AttentionShape& shape;
  ActivationView key;
  ActivationView value;  // unused for MLA
  std::span<const std::int64_t> slot_mapping;
  const Tensor& kv_cache;  // the layer's view [kernel blocks, heads, states, content]
};

// Varlen paged attention over the batch described by `metadata`: output row t gets attention of
// query row t over its request's cached keys.
struct AttentionForwardArgs {
  const AttentionShape& shape;
  ActivationView query;
  ActivationView output;
  const Tensor& kv_cache;
  const AttentionMetadata& metadata;
};

class ATTNRT_API AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;

  // Stable name reported by CUDA-graph gating and checks ("CPU_REFERENCE", "FLASHINFER").
  virtual std::string name() const = 0;
  // What attention grouping compares; equal keys may share a builder.
  virtual std::string group_key() const { return name(); }

  virtual bool supports_spec_kind(KVSpecKind kind) const = 0;
  // Whether the kernels run heads of `head_size` entries (checked for K and V widths when a layer
  // gets the backend). Default: any size, as the CPU backends' kernels take.
  virtual bool supports_head_size(int head_size) const {
    (void)head_size;
    return true;
  }
  virtual std::vector<KernelBlockSize> get_supported_kernel_block_sizes(
      const KVCacheSpec& spec) const {
    (void)spec;
    return {MultipleOf{1}};
  }
  // Preferred first; empty: any layout.
  virtual std::vector<KVCacheLayout> supported_kv_cache_layouts() const { return {}; }
  virtual bool supports_device_cpu_query_lens_mismatch() const { return true; }
  virtual bool supports_batch_invariance() const { return false; }
  // False for plan-only profiles: they describe a GPU backend but cannot execute here.
  virtual bool executable() const { return true; }

  virtual std::unique_ptr<AttentionMetadataBuilder> create_builder(
      const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
      const EngineConfig& config, Device device) const = 0;

  virtual void write_kv(const KVWriteArgs& args) const = 0;
  virtual void forward(const AttentionForwardArgs& args) const = 0;
};

using AttentionBackendPtr = std::shared_ptr<const AttentionBackend>;

}  // namespace attnrt
