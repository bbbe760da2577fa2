#include "attnrt/runner/tensor_parallel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/fail.h"

namespace attnrt {
namespace {

// Whole-model head indices of `layer` on `rank`; `per_rank` is the layer's per-rank share, as
// AttentionLayer computed it (so the division has already been checked).
RankHeadRange heads_on_rank(const LayerConfig& layer, const AttentionLayer& per_rank, int rank,
                            int world) {
  RankHeadRange range;
  range.layer = layer.name;
  range.query_count = per_rank.num_heads();
  range.query_begin = rank * range.query_count;
  range.kv_count = per_rank.num_kv_heads();
  if (layer.type == AttentionType::mla) {
    range.kv_replicated = world > 1;  // the latent is on every rank
  } else if (layer.num_kv_heads >= world) {
    range.kv_begin = rank * range.kv_count;
  } else {
    range.kv_begin = rank / (world / layer.num_kv_heads);
    range.kv_replicated = true;
  }
  return range;
}

void check_rank(int rank, int world) {
  if (world < 1) fail("tensor parallel: the world has {} ranks; it needs at least 1", world);
  if (rank < 0 || rank >= world) {
    fail("tensor parallel: rank {} is outside the world of {} ranks [0, {})", rank, world, world);
  }
}

}  // namespace

RankHeadRange rank_head_range(const LayerConfig& layer, int rank, int world) {
  check_rank(rank, world);
  return heads_on_rank(layer, AttentionLayer(layer, world), rank, world);
}

RankPlan plan_for_rank(const EngineConfig& config, int rank, int world,
                       const BackendRegistry& registry) {
  check_rank(rank, world);
  EngineConfig ranked = config;
  ranked.parallel.tensor_parallel_size = world;
  RankPlan result;
  result.rank = rank;
  result.world = world;
  result.plan = plan_attention(ranked, registry);
  const std::span<const AttentionLayer> layers = result.plan.kv.forward_context.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].is_state_layer()) continue;
    result.heads.push_back(heads_on_rank(config.model.layers[i], layers[i], rank, world));
  }
  return result;
}

KVCachePlanSummary summarize_kv_cache_plan(const KVCachePlan& plan) {
  const KVCacheConfig& kv = plan.kv_cache_config;
  KVCachePlanSummary summary;
  summary.num_blocks = kv.num_blocks;
  summary.groups =
      fmt::format("layout {}, {} layer slots", layout_name(kv.kv_cache_layout), kv.layer_slots);
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    const KVCacheGroupSpec& group = kv.kv_cache_groups[g];
    summary.groups +=
        fmt::format("; group {}: {}, page {} B, layers {}", g, group.kv_cache_spec.describe(),
                    group.kv_cache_spec.page_size_bytes(), fmt::join(group.layer_names, ","));
  }
  return summary;
}

std::int64_t agree_kv_cache_plans(std::span<const KVCachePlanSummary> ranks) {
  if (ranks.empty()) fail("tensor parallel: no rank's KV cache plan to agree on");
  std::int64_t blocks = ranks.front().num_blocks;
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].groups != ranks.front().groups) {
      fail(
          "tensor parallel: rank {}'s KV cache groups differ from rank 0's (rank 0: {}; rank {}: "
          "{}); every rank must plan the same layers with the same specs",
          r, ranks.front().groups, r, ranks[r].groups);
    }
    blocks = std::min(blocks, ranks[r].num_blocks);
  }
  return blocks;
}

std::int64_t agree_kv_cache_plans(std::span<const KVCachePlan> ranks) {
  std::vector<KVCachePlanSummary> summaries;
  summaries.reserve(ranks.size());
  for (const KVCachePlan& plan : ranks) summaries.push_back(summarize_kv_cache_plan(plan));
  return agree_kv_cache_plans(summaries);
}

}  // namespace attnrt
