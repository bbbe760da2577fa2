// Whole-block copies inside a KV cache (SEMANTICS §3.5 "Block copy"): for each distinct view, the
// `ratio` kernel blocks of the source manager block are copied onto those of the destination, as
// runs of contiguous bytes, so padding between kernel pages is never touched.

#include "attnrt/kv/block_copy.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>
#include <vector>

#include "core/fail.h"

namespace attnrt {
namespace {

// Views are the same memory when they start at the same byte with the same strides (KV sharing).
using ViewKey = std::tuple<const std::byte*, std::vector<std::int64_t>, std::vector<std::int64_t>>;

ViewKey key_of(const Tensor& view) {
  return {view.data(), view.shape(), view.strides()};
}

struct Axis {
  std::int64_t size = 1;
  std::int64_t byte_stride = 0;
};

// One kernel block [H, N, C] as contiguous runs: `run_bytes` long, repeated over up to two axes.
struct KernelBlockRuns {
  std::int64_t run_bytes = 0;
  std::array<Axis, 2> outer{};
};

KernelBlockRuns kernel_block_runs(const Tensor& view) {
  const auto element_size = static_cast<std::int64_t>(dtype_size(view.dtype()));
  if (view.stride(3) != 1) fail("KV cache view {} has a strided content axis", view.describe());
  KernelBlockRuns runs;
  runs.run_bytes = view.size(3) * element_size;
  std::vector<Axis> axes;
  for (int d : {1, 2}) {
    if (view.size(d) > 1) axes.push_back({view.size(d), view.stride(d) * element_size});
  }
  std::ranges::sort(axes, {}, &Axis::byte_stride);
  std::size_t next_outer = 0;
  for (const Axis& axis : axes) {
    // Merge an axis into the run while it continues the run exactly (e.g. LBHNC: the whole block).
    if (next_outer == 0 && axis.byte_stride == runs.run_bytes) {
      runs.run_bytes *= axis.size;
    } else {
      runs.outer[next_outer++] = axis;
    }
  }
  return runs;
}

void copy_kernel_block(const Tensor& view, const KernelBlockRuns& runs, std::int64_t src,
                       std::int64_t dst) {
  const std::int64_t block_bytes =
      view.stride(0) * static_cast<std::int64_t>(dtype_size(view.dtype()));
  const std::byte* from = view.data() + src * block_bytes;
  std::byte* to = view.data() + dst * block_bytes;
  for (std::int64_t i = 0; i < runs.outer[0].size; ++i) {
    for (std::int64_t k = 0; k < runs.outer[1].size; ++k) {
      const std::int64_t offset = i * runs.outer[0].byte_stride + k * runs.outer[1].byte_stride;
      std::memcpy(to + offset, from + offset, static_cast<std::size_t>(runs.run_bytes));
    }
  }
}

void check_block_ids(std::span<const BlockCopy> copies, std::int64_t num_blocks) {
  for (const BlockCopy& copy : copies) {
    for (const std::int64_t id : {copy.src, copy.dst}) {
      if (id < 0 || id >= num_blocks) {
        fail("block copy {} -> {}: block id {} is outside the KV cache's {} blocks [0, {})",
             copy.src, copy.dst, id, num_blocks, num_blocks);
      }
    }
  }
}

void copy_view_blocks(const Tensor& view, const KernelBlockGeometry& geometry,
                      std::span<const BlockCopy> copies) {
  const KernelBlockRuns runs = kernel_block_runs(view);
  for (const BlockCopy& copy : copies) {
    if (copy.src == copy.dst) continue;
    for (int j = 0; j < geometry.ratio; ++j) {
      copy_kernel_block(view, runs, geometry.kernel_block_id(copy.src, j),
                        geometry.kernel_block_id(copy.dst, j));
    }
  }
}

}  // namespace

void copy_kv_cache_blocks(const KVCacheAllocation& cache, std::span<const BlockCopy> copies) {
  check_block_ids(copies, cache.num_blocks);
  if (copies.empty() || cache.views.empty()) return;
  if (!cache.backing->device().is_cpu()) {
    fail("copy_kv_cache_blocks copies host KV caches only; the cache lives on {}",
         cache.backing->device().str());
  }
  // Distinct views first (a KV-sharing alias has no geometry of its own), all checked before any
  // byte moves.
  std::set<ViewKey> seen;
  std::vector<std::pair<const Tensor*, const KernelBlockGeometry*>> distinct;
  for (const auto& [layer, view] : cache.views) {
    const auto geometry = cache.geometry.find(layer);
    if (geometry != cache.geometry.end() && seen.insert(key_of(view)).second) {
      distinct.emplace_back(&view, &geometry->second);
    }
  }
  for (const auto& [layer, view] : cache.views) {
    if (!seen.contains(key_of(view))) {
      fail("layer {} has a KV cache view but no kernel-block geometry and aliases no other layer",
           layer);
    }
  }
  for (const auto& [view, geometry] : distinct) copy_view_blocks(*view, *geometry, copies);
}

}  // namespace attnrt
