#include "attnrt/attention/backend_profile.h"

#include <algorithm>

#include "attnrt/config/cg_support.h"
#include "attnrt/config/kv_cache_layout.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// Reports the profile's capabilities; builds with the executing kernel's builder, if any.
class ProfileMetadataBuilder : public AttentionMetadataBuilder {
 public:
  ProfileMetadataBuilder(const BackendProfileConfig& profile,
                         std::unique_ptr<AttentionMetadataBuilder> kernel_builder, KVCacheSpec spec,
                         std::vector<std::string> layer_names, Device device)
      : AttentionMetadataBuilder(std::move(spec), std::move(layer_names), device),
        profile_(profile),
        support_(profile.cudagraph_support),
        kernel_builder_(std::move(kernel_builder)) {}

  AttentionCGSupport get_cudagraph_support(const EngineConfig&, const KVCacheSpec&) const override {
    return support_;
  }
  std::optional<int> get_varlen_cudagraph_max_query_len(const EngineConfig& config,
                                                        const KVCacheSpec&) const override {
    if (profile_.varlen_bound_is_decode_query_len) {
      return max_decode_query_len(config.speculative);
    }
    return profile_.varlen_cudagraph_max_query_len;
  }

  const AttentionMetadata& build(int common_prefix_len, const CommonAttentionMetadata& common,
                                 bool fast_build) override {
    return kernel().build(common_prefix_len, common, fast_build);
  }
  const AttentionMetadata& build_for_cudagraph_capture(
      const CommonAttentionMetadata& common) override {
    return kernel().build_for_cudagraph_capture(common);
  }
  std::shared_ptr<Buffer> provide_workspace(const EngineConfig& config) override {
    return kernel_builder_ ? kernel_builder_->provide_workspace(config) : nullptr;
  }
  bool accepts_workspace() const override {
    return kernel_builder_ && kernel_builder_->accepts_workspace();
  }
  void set_workspace_buffer(std::shared_ptr<Buffer> workspace) override {
    if (kernel_builder_) kernel_builder_->set_workspace_buffer(std::move(workspace));
  }

 private:
  AttentionMetadataBuilder& kernel() {
    if (!kernel_builder_) {
      fail(
          "backend {} is a plan-only profile and cannot build metadata; give the profile a "
          "\"kernel\" or choose an executable backend",
          profile_.name);
    }
    return *kernel_builder_;
  }

  BackendProfileConfig profile_;  // a copy: builders may outlive the backend object
  AttentionCGSupport support_;
  std::unique_ptr<AttentionMetadataBuilder> kernel_builder_;
};

BackendProfileConfig profile(std::string name, AttentionCGSupport support,
                             std::vector<KernelBlockSizeEntry> block_sizes,
                             std::vector<KVCacheLayout> layouts, std::vector<AttentionType> kinds,
                             bool query_lens_mismatch, bool varlen_decode) {
  BackendProfileConfig p;
  p.name = std::move(name);
  p.cudagraph_support = support;
  p.kernel_block_sizes = std::move(block_sizes);
  p.kv_cache_layouts = std::move(layouts);
  p.spec_kinds = std::move(kinds);
  p.supports_device_cpu_query_lens_mismatch = query_lens_mismatch;
  p.supports_batch_invariance = true;
  p.varlen_bound_is_decode_query_len = varlen_decode;
  return p;
}

}  // namespace

ProfileBackend::ProfileBackend(BackendProfileConfig profile, AttentionBackendPtr kernel)
    : profile_(std::move(profile)), kernel_(std::move(kernel)) {}

bool ProfileBackend::supports_spec_kind(KVSpecKind kind) const {
  if (is_state_layer_type(kind)) return false;  // state layers take no attention backend
  if (profile_.spec_kinds.empty()) return true;
  return std::ranges::find(profile_.spec_kinds, kind) != profile_.spec_kinds.end();
}

bool ProfileBackend::supports_head_size(int head_size) const {
  return kernel_ == nullptr || kernel_->supports_head_size(head_size);
}

std::vector<KernelBlockSize> ProfileBackend::get_supported_kernel_block_sizes(
    const KVCacheSpec&) const {
  std::vector<KernelBlockSize> sizes;
  for (const KernelBlockSizeEntry& entry : profile_.kernel_block_sizes) {
    if (entry.multiple_of) {
      sizes.emplace_back(MultipleOf{entry.value});
    } else {
      sizes.emplace_back(entry.value);
    }
  }
  return sizes;
}

std::vector<KVCacheLayout> ProfileBackend::supported_kv_cache_layouts() const {
  return profile_.kv_cache_layouts;
}

bool ProfileBackend::supports_device_cpu_query_lens_mismatch() const {
  return profile_.supports_device_cpu_query_lens_mismatch;
}

bool ProfileBackend::supports_batch_invariance() const {
  return profile_.supports_batch_invariance;
}

std::unique_ptr<AttentionMetadataBuilder> ProfileBackend::create_builder(
    const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
    const EngineConfig& config, Device device) const {
  std::unique_ptr<AttentionMetadataBuilder> kernel_builder;
  if (kernel_) kernel_builder = kernel_->create_builder(kv_cache_spec, layer_names, config, device);
  return std::make_unique<ProfileMetadataBuilder>(profile_, std::move(kernel_builder),
                                                  kv_cache_spec, std::move(layer_names), device);
}

const AttentionBackend& ProfileBackend::kernel_or_fail() const {
  if (!executable()) {
    fail(
        "backend {} is a plan-only profile and cannot execute attention; give the profile a "
        "\"kernel\" or choose an executable backend",
        profile_.name);
  }
  return *kernel_;
}

void ProfileBackend::write_kv(const KVWriteArgs& args) const {
  kernel_or_fail().write_kv(args);
}

void ProfileBackend::forward(const AttentionForwardArgs& args) const {
  kernel_or_fail().forward(args);
}

std::vector<BackendProfileConfig> builtin_gpu_profiles() {
  using enum AttentionType;
  using enum AttentionCGSupport;
  constexpr KVCacheLayout kLBNHC = KVCacheLayout::LBNHC;
  const std::vector<AttentionType> standard = {full, sliding_window, chunked_local, cross,
                                               encoder_only};
  const KernelBlockSizeEntry multiple_of_16{16, true};
  return {
      // FlashAttention 3 (Hopper): FULL graphs for any batch.
      profile("FLASH_ATTN", ALWAYS, {multiple_of_16}, {kLBNHC}, standard, true, false),
      profile("FLASH_ATTN_FA3", ALWAYS, {multiple_of_16}, {kLBNHC}, standard, true, false),
      // FlashAttention 2: uniform batches; reads request bounds on device, so varlen decode
      // graphs up to the decode query length replay correctly.
      profile("FLASH_ATTN_FA2", UNIFORM_BATCH, {multiple_of_16}, {kLBNHC}, standard, true, true),
      // FlashInfer plans on the host from CPU query lengths: single-token decode graphs only,
      // and no device/CPU query-length mismatch.
      profile("FLASHINFER", UNIFORM_SINGLE_TOKEN_DECODE, {{16, false}, {32, false}, {64, false}},
              {KVCacheLayout::LBHNC, kLBNHC}, {full, sliding_window}, false, false),
      profile("TRITON_ATTN", ALWAYS, {multiple_of_16}, {kLBNHC},
              {full, sliding_window, chunked_local}, true, false),
      profile("FLASHMLA", UNIFORM_BATCH, {{64, false}}, {kLBNHC}, {mla}, true, true),
  };
}

}  // namespace attnrt
