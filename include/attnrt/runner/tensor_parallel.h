#pragma once
// Tensor parallelism without a communication library: what rank r of `world` ranks plans (its
// share of every attention layer's heads, its own attention plan and KV cache), and the rule by
// which the ranks agree on one KV cache before anything is allocated or captured (vLLM's
// get_kv_cache_configs: every rank takes the smallest block count; the groups must be the same).
// A launcher (MPI, torch.distributed, threads) moves the summaries between processes.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/backend_registry.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt {

// One attention layer's heads on one rank, as whole-model head indices. Query heads are split
// evenly. KV heads are split when there are at least as many as ranks; otherwise each is
// replicated on world / num_kv_heads consecutive ranks, the ranks whose query heads use it (as
// vLLM's QKV projection does). MLA's latent is replicated on every rank.
struct RankHeadRange {
  std::string layer;
  int query_begin = 0;
  int query_count = 0;
  int kv_begin = 0;
  int kv_count = 0;
  bool kv_replicated = false;  // another rank holds the same KV heads
};

// `layer`'s heads on `rank` of `world`. Throws Error when they do not divide or the rank is
// outside [0, world).
ATTNRT_API RankHeadRange rank_head_range(const LayerConfig& layer, int rank, int world);

struct RankPlan {
  int rank = 0;
  int world = 1;
  std::vector<RankHeadRange> heads;  // the attention layers, execution order (state layers: none)
  AttentionPlan plan;  // this rank's plan (the config at tensor_parallel_size = world)
};

// Rank `rank` of `world`: `config` with parallel.tensor_parallel_size = world, planned with
// `registry`. Throws Error when the rank is outside [0, world) or the heads do not divide.
ATTNRT_API RankPlan plan_for_rank(const EngineConfig& config, int rank, int world,
                                  const BackendRegistry& registry);

// What one rank's KV cache must agree on with the others', in a form that travels between
// processes: its block count and a canonical text of its groups (layers, specs, layout).
struct KVCachePlanSummary {
  std::int64_t num_blocks = 0;
  std::string groups;
};
ATTNRT_API KVCachePlanSummary summarize_kv_cache_plan(const KVCachePlan& plan);

// The block count every rank uses: the smallest of theirs. Throws Error naming the first rank
// whose groups differ from rank 0's (ranks are the span's indices), or for an empty span.
ATTNRT_API std::int64_t agree_kv_cache_plans(std::span<const KVCachePlanSummary> ranks);
ATTNRT_API std::int64_t agree_kv_cache_plans(std::span<const KVCachePlan> ranks);

}  // namespace attnrt
