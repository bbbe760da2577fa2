#pragma once
// A tiny TinyTransformer on the real library, for tests: plan_attention, KV cache allocation and
// binding, and one step's inputs built by hand as the runner builds them (block tables, slot
// mappings, query_start_loc, seq_lens, logits rows), with per-layer metadata from each attention
// group's builder.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/engine/tiny_transformer.h"
#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/attention_plan.h"

namespace attnrt::tiny_model {

using I32 = std::vector<std::int32_t>;

constexpr int kBlockSize = 4;
constexpr int kBlocksPerRequest = 8;  // 32 positions per request
constexpr int kMaxRequests = 2;

inline LayerConfig make_layer(std::string name, AttentionType type, std::string target = "") {
  LayerConfig layer;
  layer.name = std::move(name);
  layer.type = type;
  layer.num_heads = 4;
  layer.num_kv_heads = 2;
  layer.head_size = 8;
  layer.head_size_v = 8;
  if (type == AttentionType::sliding_window) layer.sliding_window = 8;
  if (type == AttentionType::chunked_local) layer.attention_chunk_size = 4;
  if (type == AttentionType::mla) {
    layer.num_kv_heads = 1;
    layer.head_size = 32;  // 24 latent value entries + 8 rope entries: a 512 B page like the rest
    layer.head_size_v = 24;
  }
  layer.kv_sharing_target = std::move(target);
  return layer;
}

// Sliding 8 / full alternating; the last two share the first two's caches.
inline EngineConfig yoco_config(DType cache_dtype = DType::f32, bool fast_prefill = false) {
  EngineConfig config;
  config.model.name = "tiny-test";
  config.model.max_model_len = 64;
  config.model.hidden_size = 32;
  config.model.vocab_size = 64;
  config.model.layers = {make_layer("l0", AttentionType::sliding_window),
                         make_layer("l1", AttentionType::full),
                         make_layer("l2", AttentionType::sliding_window, "l0"),
                         make_layer("l3", AttentionType::full, "l1")};
  config.cache.block_size = kBlockSize;
  config.cache.dtype = cache_dtype;
  config.cache.layout = KVCacheLayout::LBNHC;
  config.cache.memory = 64 << 10;
  config.cache.kv_sharing_fast_prefill = fast_prefill;
  config.compilation.cudagraph_mode = CUDAGraphMode::NONE;
  config.scheduler.max_num_seqs = 4;
  config.scheduler.max_num_batched_tokens = 32;
  return config;
}

inline BackendRegistry registry_with(AttentionBackendPtr backend) {
  BackendRegistry registry;
  registry.add(backend);
  registry.set_default(backend->name());
  return registry;
}

// A planned, allocated and bound KV cache with a model on top. Not movable: builders keep a
// reference to `config`.
struct Rig {
  explicit Rig(EngineConfig engine_config, std::uint64_t seed = 7, DType weights = DType::f32,
               AttentionBackendPtr backend = nullptr)
      : config(std::move(engine_config)),
        registry(backend ? registry_with(backend) : backend_registry_for(config)),
        plan(plan_attention(config, registry)) {
    cache =
        allocate_kv_cache(plan.kv.kv_cache_config, Device::cpu(), plan.backends.kernel_block_sizes);
    bind_kv_caches(cache.views, plan.kv.forward_context, plan.kv.kv_cache_config, config,
                   plan.backends.attn_groups);
    TinyTransformerOptions options;
    options.seed = seed;
    options.weight_dtype = weights;
    options.fast_prefill_layers = plan.fast_prefill_layers;
    model = std::make_unique<TinyTransformer>(config, plan.kv.forward_context, options);
  }
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  EngineConfig config;
  BackendRegistry registry;
  AttentionPlan plan;
  KVCacheAllocation cache;
  std::unique_ptr<TinyTransformer> model;
};

// Tokens [start, start + length) of request `request`, scheduled in one step.
struct Chunk {
  int request = 0;
  int start = 0;
  int length = 0;
};

// The arrays of one step, built by hand as the runner would, and the per-layer metadata from
// each attention group's builder. Groups overlay one block pool, so request r owns manager
// blocks (g*2 + r)*8 .. (g*2 + r)*8 + 7 in group g.
class StepInputs {
 public:
  StepInputs(Rig& rig, const std::vector<I32>& sequences, std::vector<Chunk> chunks,
             int num_tokens_padded, bool fast_prefill, int num_logits_padded = 0)
      : chunks_(std::move(chunks)), num_tokens_(num_tokens_padded) {
    lay_out_tokens(sequences);
    const int num_groups = static_cast<int>(rig.plan.backends.attn_groups.size());
    block_tables_.resize(num_groups);
    slot_mappings_.assign(num_groups, std::vector<std::int64_t>(num_tokens_, PAD_SLOT_ID));
    common_.resize(num_groups);
    for (int g = 0; g < num_groups; ++g) fill_group(rig, g);
    if (fast_prefill && max_query_len_ > 1) stage_fast_prefill(num_logits_padded);
    build_metadata(rig);
  }
  StepInputs(const StepInputs&) = delete;  // the metadata points into this object
  StepInputs& operator=(const StepInputs&) = delete;

  ModelStep model_step() const {
    ModelStep step;
    step.num_tokens = num_tokens_;
    step.token_ids = token_ids_;
    step.positions = positions_;
    step.metadata = metadata_;
    step.logits_indices = logits_indices_;
    step.logits_indices_padded = logits_indices_padded_;
    step.num_logits_indices = static_cast<int>(logits_indices_.size());
    return step;
  }
  // (request, position) of each logits row.
  const std::vector<std::pair<int, int>>& logits_positions() const { return logits_positions_; }

 private:
  void lay_out_tokens(const std::vector<I32>& sequences) {
    token_ids_.assign(num_tokens_, 0);  // padding rows: token 0 at position 0
    positions_.assign(num_tokens_, 0);
    query_start_loc_.push_back(0);
    int t = 0;
    for (const Chunk& chunk : chunks_) {
      for (int p = chunk.start; p < chunk.start + chunk.length; ++p, ++t) {
        token_ids_[t] = sequences[chunk.request][p];
        positions_[t] = p;
      }
      query_start_loc_.push_back(t);
      seq_lens_.push_back(chunk.start + chunk.length);
      logits_indices_.push_back(t - 1);
      logits_positions_.emplace_back(chunk.request, chunk.start + chunk.length - 1);
      max_query_len_ = std::max(max_query_len_, chunk.length);
    }
  }

  void fill_group(Rig& rig, int g) {
    EXPECT_EQ(rig.plan.backends.kernel_block_sizes[g], kBlockSize);
    I32& table = block_tables_[g];
    for (const Chunk& chunk : chunks_) {
      for (int b = 0; b < kBlocksPerRequest; ++b) {
        table.push_back((g * kMaxRequests + chunk.request) * kBlocksPerRequest + b);
      }
    }
    std::vector<std::int64_t>& slots = slot_mappings_[g];
    for (std::size_t r = 0; r < chunks_.size(); ++r) {
      for (int t = query_start_loc_[r]; t < query_start_loc_[r + 1]; ++t) {
        const auto block = table[r * kBlocksPerRequest + positions_[t] / kBlockSize];
        slots[t] = static_cast<std::int64_t>(block) * kBlockSize + positions_[t] % kBlockSize;
      }
    }
    rig.plan.backends.attn_groups[g].front().map_to_kernel_slot_mapping(slots);
    CommonAttentionMetadata& common = common_[g];
    common.device = Device::cpu();
    common.query_start_loc = common.query_start_loc_cpu = query_start_loc_;
    common.seq_lens = common.seq_lens_cpu = seq_lens_;
    common.num_reqs = static_cast<int>(chunks_.size());
    common.num_actual_tokens = num_tokens_;
    common.max_query_len = max_query_len_;
    common.max_seq_len = *std::max_element(seq_lens_.begin(), seq_lens_.end());
    common.block_table =
        BlockTableView{table.data(), common.num_reqs, kBlocksPerRequest, kBlocksPerRequest};
    common.slot_mapping = slots;
    common.positions = positions_;
  }

  // FastPrefillHelper::prepare by hand: the logits rows padded with the last one.
  void stage_fast_prefill(int num_logits_padded) {
    logits_indices_padded_ = logits_indices_;
    logits_indices_padded_.resize(std::max<std::size_t>(num_logits_padded, logits_indices_.size()),
                                  logits_indices_.back());
    for (CommonAttentionMetadata& common : common_) {
      common.logits_indices_padded = logits_indices_padded_;
      common.num_logits_indices = static_cast<int>(logits_indices_.size());
      common.max_logits_per_req = 1;
    }
  }

  void build_metadata(Rig& rig) {
    const ForwardContext& context = rig.plan.kv.forward_context;
    metadata_.assign(context.size(), nullptr);
    for (std::size_t g = 0; g < common_.size(); ++g) {
      for (AttentionGroup& group : rig.plan.backends.attn_groups[g]) {
        const AttentionMetadata* built = &group.get_metadata_builder(0).build(0, common_[g]);
        for (const std::string& name : group.layer_names) {
          metadata_[&context.at(name) - context.layers().data()] = built;
        }
      }
    }
  }

  std::vector<Chunk> chunks_;
  int num_tokens_;
  int max_query_len_ = 0;
  I32 token_ids_;
  std::vector<std::int64_t> positions_;
  I32 query_start_loc_;
  I32 seq_lens_;
  std::vector<I32> block_tables_;
  I32 logits_indices_;
  I32 logits_indices_padded_;
  std::vector<std::pair<int, int>> logits_positions_;
  std::vector<std::vector<std::int64_t>> slot_mappings_;
  std::vector<CommonAttentionMetadata> common_;
  std::vector<const AttentionMetadata*> metadata_;
};

}  // namespace attnrt::tiny_model
