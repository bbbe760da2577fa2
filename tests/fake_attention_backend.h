#pragma once
// Test-local attention backends whose capabilities are plain data, for the attn_utils tests: a
// builder records what it was built from and how many builds it served; the kernels do nothing.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_layer.h"
#include "attnrt/core/buffer.h"

namespace attnrt::testing {

struct FakeCapabilities {
  AttentionCGSupport cg_support = AttentionCGSupport::ALWAYS;
  std::optional<int> varlen_bound;
  bool query_lens_mismatch = true;
  bool batch_invariance = false;
  std::vector<KernelBlockSize> kernel_block_sizes = {MultipleOf{1}};
  bool provides_workspace = false;
  bool accepts_workspace = false;
};

// Capabilities of a builder at `support` level with a varlen bound.
inline FakeCapabilities cg_caps(AttentionCGSupport support,
                                std::optional<int> varlen_bound = std::nullopt) {
  FakeCapabilities caps;
  caps.cg_support = support;
  caps.varlen_bound = varlen_bound;
  return caps;
}

class FakeBuilder : public AttentionMetadataBuilder {
 public:
  FakeBuilder(FakeCapabilities caps, KVCacheSpec spec, std::vector<std::string> layer_names,
              const EngineConfig&, Device device)
      : AttentionMetadataBuilder(std::move(spec), std::move(layer_names), device),
        caps_(std::move(caps)) {}

  AttentionCGSupport get_cudagraph_support(const EngineConfig&, const KVCacheSpec&) const override {
    return caps_.cg_support;
  }
  std::optional<int> get_varlen_cudagraph_max_query_len(const EngineConfig&,
                                                        const KVCacheSpec&) const override {
    return caps_.varlen_bound;
  }
  const AttentionMetadata& build(int, const CommonAttentionMetadata& common, bool) override {
    metadata_.common = common;
    ++num_builds;
    return metadata_;
  }
  const AttentionMetadata& build_for_cudagraph_capture(
      const CommonAttentionMetadata& common) override {
    ++num_capture_builds;
    return build(0, common, false);
  }

  std::shared_ptr<Buffer> provide_workspace(const EngineConfig&) override {
    if (!caps_.provides_workspace) return nullptr;
    if (!own_workspace) own_workspace = Buffer::allocate(64);
    return own_workspace;
  }
  bool accepts_workspace() const override { return caps_.accepts_workspace; }
  void set_workspace_buffer(std::shared_ptr<Buffer> workspace) override {
    received_workspace = std::move(workspace);
  }

  int num_builds = 0;
  int num_capture_builds = 0;
  std::shared_ptr<Buffer> own_workspace;
  std::shared_ptr<Buffer> received_workspace;

 private:
  FakeCapabilities caps_;
  AttentionMetadata metadata_;
};

class FakeBackend : public AttentionBackend {
 public:
  explicit FakeBackend(std::string name, FakeCapabilities caps = {})
      : name_(std::move(name)), caps_(std::move(caps)) {}

  std::string name() const override { return name_; }
  bool supports_spec_kind(KVSpecKind) const override { return true; }
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(const KVCacheSpec&) const override {
    return caps_.kernel_block_sizes;
  }
  bool supports_device_cpu_query_lens_mismatch() const override {
    return caps_.query_lens_mismatch;
  }
  bool supports_batch_invariance() const override { return caps_.batch_invariance; }
  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& spec,
                                                           std::vector<std::string> layer_names,
                                                           const EngineConfig& config,
                                                           Device device) const override {
    ++*builders_created;
    return std::make_unique<FakeBuilder>(caps_, spec, std::move(layer_names), config, device);
  }
  void write_kv(const KVWriteArgs&) const override {}
  void forward(const AttentionForwardArgs&) const override {}

  std::shared_ptr<int> builders_created = std::make_shared<int>(0);

 private:
  std::string name_;
  FakeCapabilities caps_;
};

inline std::shared_ptr<const FakeBackend> fake_backend(std::string name,
                                                       FakeCapabilities caps = {}) {
  return std::make_shared<const FakeBackend>(std::move(name), std::move(caps));
}

inline FakeBuilder& fake_builder(AttentionMetadataBuilder& builder) {
  return dynamic_cast<FakeBuilder&>(builder);
}

}  // namespace attnrt::testing
