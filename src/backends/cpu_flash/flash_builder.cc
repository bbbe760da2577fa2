// CpuFlashMetadataBuilder: the step's CommonAttentionMetadata plus the workspace. The kernels
// plan at forward time, so the builder only sizes the workspace once: per-thread tiles for the
// group's head sizes, the plan of max_num_seqs requests, and room for split partials.

#include <algorithm>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/core/checked_math.h"
#include "flash_workspace.h"

namespace attnrt {
namespace {

std::size_t workspace_need(int key_size, int value_size, int num_threads,
                           const EngineConfig& config, const CpuFlashOptions& options) {
  const int max_reqs = std::max(1, config.scheduler.max_num_seqs);
  return checked_add(cpu_flash::fixed_workspace_bytes(key_size, value_size, num_threads, max_reqs),
                     options.partial_bytes,
                     "CPU_FLASH workspace bytes (tiles, plans and split partials)");
}

// K and V widths of a spec; an MLA value is part of the latent, so the latent bounds it.
std::size_t spec_need(const KVCacheSpec& spec, int num_threads, const EngineConfig& config,
                      const CpuFlashOptions& options) {
  const int value_size =
      spec.kind == KVSpecKind::mla || spec.head_size_v <= 0 ? spec.head_size : spec.head_size_v;
  return workspace_need(spec.head_size, value_size, num_threads, config, options);
}

// The largest need of any layer in the config, so that one workspace serves every group.
std::size_t config_need(const EngineConfig& config, int num_threads,
                        const CpuFlashOptions& options) {
  std::size_t need = 0;
  for (const LayerConfig& layer : config.model.layers) {
    const int value_size = layer.type == AttentionType::mla || layer.head_size_v <= 0
                               ? layer.head_size
                               : layer.head_size_v;
    need =
        std::max(need, workspace_need(layer.head_size, value_size, num_threads, config, options));
  }
  return need;
}

}  // namespace

CpuFlashMetadataBuilder::CpuFlashMetadataBuilder(const KVCacheSpec& kv_cache_spec,
                                                 std::vector<std::string> layer_names,
                                                 const EngineConfig& config, Device device,
                                                 const CpuFlashOptions& options, int num_threads)
    : AttentionMetadataBuilder(kv_cache_spec, std::move(layer_names), device),
      options_(options),
      num_threads_(num_threads),
      own_bytes_(spec_need(kv_cache_spec, num_threads, config, options)) {}

AttentionCGSupport CpuFlashMetadataBuilder::get_cudagraph_support(const EngineConfig& config,
                                                                  const KVCacheSpec& spec) const {
  (void)config;
  (void)spec;
  return AttentionCGSupport::ALWAYS;
}

std::optional<int> CpuFlashMetadataBuilder::get_varlen_cudagraph_max_query_len(
    const EngineConfig& config, const KVCacheSpec& spec) const {
  (void)config;
  (void)spec;
  return std::nullopt;
}

// A captured graph keeps a clone: its spans still point at the runner's persistent arrays, and it
// shares this workspace (graphs and eager steps run one at a time).
const AttentionMetadata& CpuFlashMetadataBuilder::build(int common_prefix_len,
                                                        const CommonAttentionMetadata& common,
                                                        bool fast_build) {
  (void)common_prefix_len;  // no cascade attention: a shared prefix is attended like any key
  (void)fast_build;
  if (workspace_ == nullptr) workspace_ = Buffer::allocate(own_bytes_);
  metadata_.common = common;
  metadata_.workspace = workspace_;
  return metadata_;
}

// The config-wide size walks every layer, so it is computed here, for the one builder that
// provides the shared workspace, not by each of a plan's (possibly 100 000) builders.
std::shared_ptr<Buffer> CpuFlashMetadataBuilder::provide_workspace(const EngineConfig& config) {
  if (config_bytes_ == 0) {
    config_bytes_ = std::max(own_bytes_, config_need(config, num_threads_, options_));
  }
  if (workspace_ == nullptr || workspace_->size() < config_bytes_) {
    workspace_ = Buffer::allocate(config_bytes_);
  }
  return workspace_;
}

void CpuFlashMetadataBuilder::set_workspace_buffer(std::shared_ptr<Buffer> workspace) {
  if (workspace != nullptr && workspace->size() >= own_bytes_) workspace_ = std::move(workspace);
}

}  // namespace attnrt
