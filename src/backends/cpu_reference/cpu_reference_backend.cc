// CpuReferenceBackend: capabilities and builders of the oracle backend; its kernels live in
// reference_write_kv.cc and reference_attention.cc.

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

#include <fmt/ranges.h>

#include "core/fail.h"
#include "reference_kernels.h"

namespace attnrt {

// Encoder-only layers attend within the step's own tokens with no cache, but forward() receives
// keys only through a KV cache view, so they are refused here rather than mis-served.
bool CpuReferenceBackend::supports_spec_kind(KVSpecKind kind) const {
  return kind != KVSpecKind::encoder_only && !is_state_layer_type(kind);
}

std::vector<KernelBlockSize> CpuReferenceBackend::get_supported_kernel_block_sizes(
    const KVCacheSpec& spec) const {
  (void)spec;
  return {MultipleOf{1}};
}

std::unique_ptr<AttentionMetadataBuilder> CpuReferenceBackend::create_builder(
    const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
    const EngineConfig& config, Device device) const {
  if (!supports_spec_kind(kv_cache_spec.kind)) {
    fail("CPU_REFERENCE does not serve {} attention (layers {}); choose another backend for them",
         attention_type_name(kv_cache_spec.kind), fmt::join(layer_names, ", "));
  }
  if (kv_cache_spec.tokens_per_state != 1) {
    fail(
        "CPU_REFERENCE addresses one token per cache state, but spec {} packs {} tokens per "
        "state (layers {}); choose a backend for compressed states",
        kv_cache_spec.describe(), kv_cache_spec.tokens_per_state, fmt::join(layer_names, ", "));
  }
  if (!device.is_cpu()) {
    fail("CPU_REFERENCE runs on the host, but layers {} were placed on {}; use device cpu",
         fmt::join(layer_names, ", "), device.str());
  }
  (void)config;  // the reference kernels size nothing by the config
  return std::make_unique<CpuReferenceMetadataBuilder>(kv_cache_spec, std::move(layer_names),
                                                       device);
}

void CpuReferenceBackend::write_kv(const KVWriteArgs& args) const {
  cpu_reference::write_kv(args);
}

void CpuReferenceBackend::forward(const AttentionForwardArgs& args) const {
  cpu_reference::attention_forward(args);
}

AttentionBackendPtr make_cpu_reference_backend() {
  return std::make_shared<const CpuReferenceBackend>();
}

}  // namespace attnrt
