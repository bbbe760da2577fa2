#include "attnrt/backends/fast_prefill_backend.h"

#include <algorithm>

#include "core/fail.h"

namespace attnrt {

FastPrefillMetadataBuilder::FastPrefillMetadataBuilder(
    std::unique_ptr<AttentionMetadataBuilder> wrapped, const KVCacheSpec& kv_cache_spec,
    std::vector<std::string> layer_names, const EngineConfig& config, Device device)
    : AttentionMetadataBuilder(kv_cache_spec, std::move(layer_names), device),
      wrapped_(std::move(wrapped)),
      // Sized once for the largest batch, so steady-state steps allocate nothing.
      query_start_loc_(static_cast<std::size_t>(std::max(config.scheduler.max_num_seqs, 0)) + 1) {}

AttentionCGSupport FastPrefillMetadataBuilder::get_cudagraph_support(
    const EngineConfig& config, const KVCacheSpec& spec) const {
  return wrapped_->get_cudagraph_support(config, spec);
}

std::optional<int> FastPrefillMetadataBuilder::get_varlen_cudagraph_max_query_len(
    const EngineConfig& config, const KVCacheSpec& spec) const {
  return wrapped_->get_varlen_cudagraph_max_query_len(config, spec);
}

CommonAttentionMetadata FastPrefillMetadataBuilder::rewrite(const CommonAttentionMetadata& common) {
  const std::size_t needed = static_cast<std::size_t>(common.num_reqs) + 1;
  if (query_start_loc_.size() < needed) query_start_loc_.resize(needed);
  return make_kv_sharing_fast_prefill_common_attn_metadata(common, query_start_loc_);
}

const AttentionMetadata& FastPrefillMetadataBuilder::build(int common_prefix_len,
                                                           const CommonAttentionMetadata& common,
                                                           bool fast_build) {
  return wrapped_->build(common_prefix_len, rewrite(common), fast_build);
}

const AttentionMetadata& FastPrefillMetadataBuilder::build_for_cudagraph_capture(
    const CommonAttentionMetadata& common) {
  // vLLM's capture path goes through the overridden build, so it is rewritten too.
  return wrapped_->build_for_cudagraph_capture(rewrite(common));
}

std::shared_ptr<Buffer> FastPrefillMetadataBuilder::provide_workspace(const EngineConfig& config) {
  return wrapped_->provide_workspace(config);
}

bool FastPrefillMetadataBuilder::accepts_workspace() const {
  return wrapped_->accepts_workspace();
}

void FastPrefillMetadataBuilder::set_workspace_buffer(std::shared_ptr<Buffer> workspace) {
  wrapped_->set_workspace_buffer(std::move(workspace));
}

FastPrefillBackend::FastPrefillBackend(AttentionBackendPtr wrapped) : wrapped_(std::move(wrapped)) {
  if (wrapped_ == nullptr) fail("FastPrefillBackend needs a backend to wrap, got none");
}

std::string FastPrefillBackend::name() const {
  return std::string(kFastPrefillPrefix) + wrapped_->name();
}

std::string FastPrefillBackend::group_key() const {
  // One key per wrapped backend: every fast-prefill layer of it shares one attention group,
  // apart from the wrapped backend's own (non-fast-prefill) layers.
  return std::string(kFastPrefillPrefix) + ":" + wrapped_->group_key();
}

bool FastPrefillBackend::supports_spec_kind(KVSpecKind kind) const {
  return wrapped_->supports_spec_kind(kind);
}

std::vector<KernelBlockSize> FastPrefillBackend::get_supported_kernel_block_sizes(
    const KVCacheSpec& spec) const {
  return wrapped_->get_supported_kernel_block_sizes(spec);
}

bool FastPrefillBackend::supports_head_size(int head_size) const {
  return wrapped_->supports_head_size(head_size);
}

std::vector<KVCacheLayout> FastPrefillBackend::supported_kv_cache_layouts() const {
  return wrapped_->supported_kv_cache_layouts();
}

bool FastPrefillBackend::supports_device_cpu_query_lens_mismatch() const {
  return wrapped_->supports_device_cpu_query_lens_mismatch();
}

bool FastPrefillBackend::supports_batch_invariance() const {
  return wrapped_->supports_batch_invariance();
}

bool FastPrefillBackend::executable() const {
  return wrapped_->executable();
}

std::unique_ptr<AttentionMetadataBuilder> FastPrefillBackend::create_builder(
    const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
    const EngineConfig& config, Device device) const {
  auto wrapped = wrapped_->create_builder(kv_cache_spec, layer_names, config, device);
  return std::make_unique<FastPrefillMetadataBuilder>(std::move(wrapped), kv_cache_spec,
                                                      std::move(layer_names), config, device);
}

void FastPrefillBackend::write_kv(const KVWriteArgs& args) const {
  wrapped_->write_kv(args);
}

void FastPrefillBackend::forward(const AttentionForwardArgs& args) const {
  wrapped_->forward(args);
}

AttentionBackendPtr create_fast_prefill_custom_backend(AttentionBackendPtr underlying) {
  return std::make_shared<const FastPrefillBackend>(std::move(underlying));
}

bool is_fast_prefill_backend(const AttentionBackend& backend) {
  return dynamic_cast<const FastPrefillBackend*>(&backend) != nullptr;
}

}  // namespace attnrt
