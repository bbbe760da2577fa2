#pragma once
// ProfileBackend: a backend whose capabilities are data (a `backends` entry of the config, or a
// built-in profile of a well-known GPU backend). It executes with the built-in kernel it names,
// or is plan-only: `plan` can answer "what if I used FlashInfer", `run` refuses it.

#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API ProfileBackend : public AttentionBackend {
 public:
  // `kernel` executes the profile; nullptr makes it plan-only.
  ProfileBackend(BackendProfileConfig profile, AttentionBackendPtr kernel);

  std::string name() const override { return profile_.name; }
  bool supports_spec_kind(KVSpecKind kind) const override;
  // The executing kernel's answer; a plan-only profile declares no head-size limit.
  bool supports_head_size(int head_size) const override;
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(
      const KVCacheSpec& spec) const override;
  std::vector<KVCacheLayout> supported_kv_cache_layouts() const override;
  bool supports_device_cpu_query_lens_mismatch() const override;
  bool supports_batch_invariance() const override;
  bool executable() const override { return kernel_ != nullptr && kernel_->executable(); }

  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& kv_cache_spec,
                                                           std::vector<std::string> layer_names,
                                                           const EngineConfig& config,
                                                           Device device) const override;
  void write_kv(const KVWriteArgs& args) const override;
  void forward(const AttentionForwardArgs& args) const override;

  const BackendProfileConfig& profile() const { return profile_; }

 private:
  const AttentionBackend& kernel_or_fail() const;

  BackendProfileConfig profile_;
  AttentionBackendPtr kernel_;
};

// FLASH_ATTN (FA3 on Hopper: ALWAYS), FLASH_ATTN_FA2 (UNIFORM_BATCH), FLASH_ATTN_FA3, FLASHINFER,
// TRITON_ATTN and FLASHMLA with the capabilities vLLM documents for them; all plan-only.
ATTNRT_API std::vector<BackendProfileConfig> builtin_gpu_profiles();

}  // namespace attnrt
