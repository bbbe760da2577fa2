#include "attnrt/runner/kernel_block_sizes.h"

#include <algorithm>
#include <functional>
#include <string>

#include "core/fail.h"

namespace attnrt {
namespace {

using Constraints = std::vector<std::vector<KernelBlockSize>>;  // one list per backend

bool supported_by_all(const Constraints& constraints, int block_size) {
  return std::all_of(constraints.begin(), constraints.end(), [&](const auto& sizes) {
    return kernel_block_size_supported(sizes, block_size);
  });
}

// "FLASH_ATTN [MultipleOf(16)], TRITON_ATTN [32, 64]": for error messages.
std::string describe_constraints(std::span<const AttentionBackend* const> backends,
                                 const Constraints& constraints) {
  std::string out;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    if (i > 0) out += ", ";
    out += backends[i]->name() + " " + describe_kernel_block_sizes(constraints[i]);
  }
  return out;
}

}  // namespace

int select_common_block_size(int manager_block_size,
                             std::span<const AttentionBackend* const> backends,
                             const KVCacheSpec& spec) {
  Constraints constraints;
  for (const AttentionBackend* backend : backends) {
    constraints.push_back(backend->get_supported_kernel_block_sizes(spec));
    if (constraints.back().empty()) {
      fail(
          "Kernel block-size constraints must not be empty. Backend {} lists no kernel block "
          "size for {}; it must list at least one size or MultipleOf",
          backend->name(), spec.describe());
    }
  }
  // Zero backends accept everything (vacuously), so the manager size stands.
  if (supported_by_all(constraints, manager_block_size)) return manager_block_size;

  std::vector<int> exact_sizes;
  for (const auto& sizes : constraints) {
    for (const KernelBlockSize& size : sizes) {
      if (const int* exact = std::get_if<int>(&size)) exact_sizes.push_back(*exact);
    }
  }
  std::sort(exact_sizes.begin(), exact_sizes.end(), std::greater<>());
  for (const int size : exact_sizes) {
    if (size > 0 && manager_block_size % size == 0 && supported_by_all(constraints, size)) {
      return size;
    }
  }
  fail(
      "No common block size for {}. The backends accept {}; set cache.block_size to a size they "
      "all accept, or give these layers backends that agree",
      manager_block_size, describe_constraints(backends, constraints));
}

std::vector<int> prepare_kernel_block_sizes(
    const KVCacheConfig& kv_cache_config,
    std::span<const std::vector<AttentionGroup>> attn_groups) {
  std::vector<int> kernel_block_sizes;
  const auto& kv_cache_groups = kv_cache_config.kv_cache_groups;
  for (std::size_t g = 0; g < kv_cache_groups.size(); ++g) {
    const KVCacheSpec& spec = kv_cache_groups[g].kv_cache_spec;
    std::vector<const AttentionBackend*> backends;
    // Encoder-only groups keep no blocks to split; vLLM skips them, attnrt keeps their entry so
    // that index g stays group g.
    if (spec.owns_kv_cache() && g < attn_groups.size()) {
      for (const AttentionGroup& group : attn_groups[g]) backends.push_back(group.backend.get());
    }
    kernel_block_sizes.push_back(select_common_block_size(spec.block_size, backends, spec));
  }
  return kernel_block_sizes;
}

}  // namespace attnrt
