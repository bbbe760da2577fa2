#pragma once
// StepWorkload: a runner's per-step host path (DESIGN.md §4) on synthetic running requests —
// append_block_ids, InputBatch, dispatch and padding, block-table gather, slot mappings,
// fast-prefill staging, build_attn_metadata — for `attnrt bench step`, bench/step_bench.cc and
// the allocation test. Header-only so that the benchmark binary, which links only the library,
// can use it. The requests' own bookkeeping (what a scheduler does) is part of a step too, but
// is a few integer updates per request.

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/cg_support.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "attnrt/runner/cudagraph_resolution.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt::bench {

// decode: every request decodes one token. mixed: every 8th request (the first one included)
// prefills a long prompt in 32-token chunks while the others decode.
enum class StepKind { decode, mixed };

inline std::string_view step_kind_name(StepKind kind) {
  return kind == StepKind::decode ? "decode" : "mixed";
}

class StepWorkload {
 public:
  static constexpr int kPrefillChunk = 32;

  // `num_reqs` requests running on `config` (its scheduler limits are raised to fit them).
  StepWorkload(int num_reqs, StepKind kind, EngineConfig config = default_config())
      : config_(sized(std::move(config), num_reqs)),
        registry_(backend_registry_for(config_)),
        plan_(plan_kv_cache(config_, {}, &registry_)),
        attn_(init_attn_backend(plan_.kv_cache_config, config_, plan_.forward_context,
                                Device::cpu())),
        manager_(config_, resolve(config_, attn_.cg_support)),
        tables_(make_tables(config_, plan_.kv_cache_config, attn_.attn_groups, num_reqs)),
        batch_(config_.scheduler.max_num_seqs, config_.scheduler.max_num_batched_tokens),
        helper_(config_.scheduler.max_num_batched_tokens, manager_),
        metadata_(attn_.attn_groups) {
    manager_.mark_captured();  // steady state: graphs are captured
    blocks_per_req_ = blocks_per_req(config_);
    new_ids_.resize(attn_.attn_groups.size());
    for (std::vector<std::int32_t>& ids : new_ids_) ids.reserve(blocks_per_req_);
    id_spans_.resize(attn_.attn_groups.size());
    for (int i = 0; i < num_reqs; ++i) {
      const bool prefill = kind == StepKind::mixed && i % 8 == 0;
      Request r;
      r.slot = i;
      r.query_len = prefill ? kPrefillChunk : 1;
      r.prompt_len = prefill ? config_.model.max_model_len : 1;
      // Staggered lengths, so that requests cross block boundaries on different steps.
      r.start = prefill ? 0 : 64 + (i * 37) % (config_.model.max_model_len / 2);
      r.computed = prefill ? (i * kPrefillChunk) % (config_.model.max_model_len / 2) : r.start;
      requests_.push_back(r);
      scheduled_.push_back({});
      append_new_blocks(requests_.back(), true);
    }
  }
  StepWorkload(const StepWorkload&) = delete;
  StepWorkload& operator=(const StepWorkload&) = delete;

  void step() {
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      Request& r = requests_[i];
      r.computed += r.last_query_len;
      const bool restart = r.computed + r.query_len > config_.model.max_model_len;
      if (restart) r.computed = r.start;  // finished: a new request takes the slot
      append_new_blocks(r, restart);
      r.last_query_len = r.query_len;
      scheduled_[i] = {r.slot, r.computed, r.query_len, r.prompt_len, 0};
    }
    batch_.prepare(scheduled_);
    descriptor_ = manager_.dispatch(batch_.num_reqs(), batch_.num_tokens(),
                                    batch_.uniform_decode_token_count(), 0, batch_.max_query_len());
    batch_.pad_to(descriptor_);
    tables_.gather_block_tables(batch_.idx_mapping(), batch_.num_reqs_padded());
    tables_.compute_slot_mappings(batch_.idx_mapping(), batch_.query_start_loc(),
                                  batch_.positions(), batch_.num_tokens_padded(),
                                  batch_.is_padding());
    tables_.translate_slot_mappings(attn_.attn_groups);
    fast_prefill_ = helper_.prepare(batch_.logits_indices(), batch_.num_reqs(),
                                    batch_.cu_num_logits(), batch_.has_prefill(), descriptor_);
    AttentionMetadataInputs inputs = make_attention_metadata_inputs(batch_, tables_);
    inputs.fast_prefill = fast_prefill_ ? &*fast_prefill_ : nullptr;
    build_attn_metadata(attn_.attn_groups, inputs, metadata_);
  }

  const InputBatch& batch() const { return batch_; }
  const BatchExecutionDescriptor& descriptor() const { return descriptor_; }
  const AttentionMetadataByLayer& metadata() const { return metadata_; }
  const std::optional<FastPrefillBatchMetadata>& fast_prefill() const { return fast_prefill_; }

 private:
  struct Request {
    int slot = 0;
    int start = 0;      // context length a (re)started request begins with
    int computed = 0;   // tokens in the KV cache
    int query_len = 1;  // tokens per step
    int last_query_len = 0;
    int prompt_len = 1;
    int num_blocks = 0;  // manager blocks held in every group
  };

  static EngineConfig sized(EngineConfig config, int num_reqs) {
    config.scheduler.max_num_seqs = std::max(config.scheduler.max_num_seqs, num_reqs);
    const int tokens = num_reqs * kPrefillChunk;
    config.scheduler.max_num_batched_tokens =
        std::max(config.scheduler.max_num_batched_tokens, tokens);
    return config;
  }
  static CUDAGraphMode resolve(const EngineConfig& config, const AttentionCGSupportInfo& support) {
    return resolve_cudagraph_mode(config.compilation.cudagraph_mode, support.min_cg_support,
                                  support.min_cg_attn_backend,
                                  max_decode_query_len(config.speculative),
                                  config.compilation.attention_split_piecewise)
        .mode;
  }
  static int blocks_per_req(const EngineConfig& config) {
    return (config.model.max_model_len + config.cache.block_size - 1) / config.cache.block_size;
  }
  // Every request owns blocks_per_req distinct manager blocks, so the KV cache is sized for them
  // (the host path never touches the cache itself).
  static BlockTables make_tables(const EngineConfig& config, KVCacheConfig kv_cache_config,
                                 std::span<const std::vector<AttentionGroup>> attn_groups,
                                 int num_reqs) {
    const std::int64_t needed = static_cast<std::int64_t>(num_reqs) * blocks_per_req(config);
    kv_cache_config.num_blocks = std::max(kv_cache_config.num_blocks, needed);
    return BlockTables::from_config(config, kv_cache_config, attn_groups);
  }

  // Appends the blocks the request's next step reaches (all of them when `restart`).
  void append_new_blocks(Request& r, bool restart) {
    if (restart) r.num_blocks = 0;
    const int block_size = config_.cache.block_size;
    const int needed = (r.computed + r.query_len + block_size - 1) / block_size;
    if (needed == r.num_blocks) return;
    for (std::size_t g = 0; g < new_ids_.size(); ++g) {
      new_ids_[g].clear();
      for (int b = r.num_blocks; b < needed; ++b)
        new_ids_[g].push_back(r.slot * blocks_per_req_ + b);
      id_spans_[g] = new_ids_[g];
    }
    tables_.append_block_ids(r.slot, id_spans_, restart);
    r.num_blocks = needed;
  }

  EngineConfig config_;
  BackendRegistry registry_;
  KVCachePlan plan_;
  InitAttnBackendResult attn_;
  CudaGraphManager manager_;
  BlockTables tables_;
  InputBatch batch_;
  FastPrefillHelper helper_;
  AttentionMetadataByLayer metadata_;
  int blocks_per_req_ = 0;
  std::vector<Request> requests_;
  std::vector<ScheduledRequest> scheduled_;
  std::vector<std::vector<std::int32_t>> new_ids_;       // per group, reused
  std::vector<std::span<const std::int32_t>> id_spans_;  // per group, reused
  BatchExecutionDescriptor descriptor_;
  std::optional<FastPrefillBatchMetadata> fast_prefill_;
};

}  // namespace attnrt::bench
