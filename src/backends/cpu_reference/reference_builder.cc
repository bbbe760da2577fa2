// CpuReferenceMetadataBuilder: the reference kernels need no plan of their own, so the backend
// metadata is the step's CommonAttentionMetadata, kept in a builder-owned object.

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"

namespace attnrt {

AttentionCGSupport CpuReferenceMetadataBuilder::get_cudagraph_support(
    const EngineConfig& config, const KVCacheSpec& spec) const {
  (void)config;
  (void)spec;
  return AttentionCGSupport::ALWAYS;
}

std::optional<int> CpuReferenceMetadataBuilder::get_varlen_cudagraph_max_query_len(
    const EngineConfig& config, const KVCacheSpec& spec) const {
  (void)config;
  (void)spec;
  return std::nullopt;
}

// A captured graph keeps a clone of this metadata, whose spans still point at the runner's
// persistent arrays; replays refresh those arrays, never this object.
const AttentionMetadata& CpuReferenceMetadataBuilder::build(int common_prefix_len,
                                                            const CommonAttentionMetadata& common,
                                                            bool fast_build) {
  (void)common_prefix_len;  // no cascade attention: a shared prefix is attended like any key
  (void)fast_build;
  metadata_.common = common;
  return metadata_;
}

}  // namespace attnrt
