#pragma once
// AttentionMetadataBuilder: turns one step's CommonAttentionMetadata into a backend's metadata
// (SEMANTICS §5.2). One builder per attention group and micro-batch. The builder owns the
// metadata it returns (valid until its next build), so steady-state steps allocate nothing; a
// graph capture keeps a `clone()`.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/config/cg_support.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/buffer.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_spec.h"

namespace attnrt {

// What a backend's kernels read. Backends derive from it to add their own plan (splits, tiles).
struct ATTNRT_API AttentionMetadata {
  virtual ~AttentionMetadata() = default;
  virtual std::unique_ptr<AttentionMetadata> clone() const {
    return std::make_unique<AttentionMetadata>(*this);
  }
  CommonAttentionMetadata common;
};

class ATTNRT_API AttentionMetadataBuilder {
 public:
  // `kv_cache_spec` carries the KERNEL block size when blocks are split. A builder keeps no
  // reference to the config it was made for: an embedder may drop the config after planning.
  AttentionMetadataBuilder(KVCacheSpec kv_cache_spec, std::vector<std::string> layer_names,
                           Device device)
      : kv_cache_spec_(std::move(kv_cache_spec)),
        layer_names_(std::move(layer_names)),
        device_(device) {}
  virtual ~AttentionMetadataBuilder() = default;
  AttentionMetadataBuilder(const AttentionMetadataBuilder&) = delete;
  AttentionMetadataBuilder& operator=(const AttentionMetadataBuilder&) = delete;

  // The FULL-graph level this builder's metadata supports (SEMANTICS §1.1).
  virtual AttentionCGSupport get_cudagraph_support(const EngineConfig& config,
                                                   const KVCacheSpec& spec) const = 0;
  // Largest per-request query length a FULL decode graph can replay with ragged query lengths;
  // nullopt: no varlen support (SEMANTICS §5.2).
  virtual std::optional<int> get_varlen_cudagraph_max_query_len(const EngineConfig& config,
                                                                const KVCacheSpec& spec) const {
    (void)config;
    (void)spec;
    return std::nullopt;
  }

  virtual const AttentionMetadata& build(int common_prefix_len,
                                         const CommonAttentionMetadata& common,
                                         bool fast_build = false) = 0;
  virtual const AttentionMetadata& build_for_cudagraph_capture(
      const CommonAttentionMetadata& common) {
    return build(0, common);
  }

  // Workspace sharing (SEMANTICS §7.7 phase 3): the first builder that provides a workspace
  // supplies it to every later builder that accepts one; sized for every layer of `config`.
  virtual std::shared_ptr<Buffer> provide_workspace(const EngineConfig& config) {
    (void)config;
    return nullptr;
  }
  virtual bool accepts_workspace() const { return false; }
  // By value: the builders that accept one keep it.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual void set_workspace_buffer(std::shared_ptr<Buffer> /*workspace*/) {}

  const KVCacheSpec& kv_cache_spec() const { return kv_cache_spec_; }
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  Device device() const { return device_; }

 private:
  KVCacheSpec kv_cache_spec_;
  std::vector<std::string> layer_names_;
  Device device_;
};

}  // namespace attnrt
