#pragma once
// The fixed plans fuzz_step_inputs drives, and the per-input runner state built on one of them:
// block tables, input batch, graph manager, fast-prefill helper and attention metadata, wired
// as src/engine/engine.cc wires them. The plans are small (a few dozen blocks, 8 request slots)
// so that every operation of an input is cheap and every row can be checked after it.

#include <array>
#include <optional>
#include <string_view>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/block_tables.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "attnrt/runner/fast_prefill_helper.h"
#include "attnrt/runner/input_batch.h"

namespace attnrt::fuzz {

// 0: the default model's shape (sliding + full groups, KV sharing, fast prefill).
// 1: 64-token manager blocks split into 16-token kernel blocks by a config profile, in a layout
//    that spaces kernel ids, so slot mappings are translated; 2 speculative tokens.
// 2: MLA + full with 24-token blocks (not a power of two: the division path; the full group's
//    pages unify to 48 tokens), FULL_DECODE_ONLY, two LoRA capture cases.
inline constexpr std::array<std::string_view, 3> kStepConfigs = {
    R"({"model": {"name": "fuzz-yoco", "max_model_len": 256, "layers": [
         {"repeat": 2, "layers": [
           {"type": "sliding_window", "sliding_window": 32, "num_heads": 4, "num_kv_heads": 2, "head_size": 16},
           {"type": "full", "num_heads": 4, "num_kv_heads": 2, "head_size": 16}]},
         {"type": "sliding_window", "sliding_window": 32, "num_heads": 4, "num_kv_heads": 2, "head_size": 16,
          "kv_sharing_target": "model.layers.2.self_attn"},
         {"type": "full", "num_heads": 4, "num_kv_heads": 2, "head_size": 16,
          "kv_sharing_target": "model.layers.3.self_attn"}]},
       "cache": {"block_size": 16, "memory": "64KiB", "kv_sharing_fast_prefill": true},
       "compilation": {"cudagraph_mode": "FULL_AND_PIECEWISE", "capture_sizes": [1, 2, 4, 8, 16, 32]},
       "scheduler": {"max_num_seqs": 8, "max_num_batched_tokens": 64}})",
    R"({"model": {"name": "fuzz-split", "max_model_len": 512, "layers": [
         {"repeat": 2, "layers": [
           {"type": "full", "num_heads": 4, "num_kv_heads": 1, "head_size": 16, "backend": "SPLIT16"},
           {"type": "sliding_window", "sliding_window": 48, "num_heads": 4, "num_kv_heads": 1,
            "head_size": 16, "backend": "SPLIT16"}]}]},
       "cache": {"block_size": 64, "layout": "BLNHC", "memory": "128KiB"},
       "compilation": {"cudagraph_mode": "FULL_AND_PIECEWISE", "capture_sizes": [1, 3, 6, 12, 24, 48]},
       "scheduler": {"max_num_seqs": 8, "max_num_batched_tokens": 64},
       "speculative": {"num_speculative_tokens": 2},
       "backends": [{"name": "SPLIT16", "kernel": "CPU_REFERENCE", "cudagraph_support": "UNIFORM_BATCH",
                     "kernel_block_sizes": [16]}]})",
    R"({"model": {"name": "fuzz-mla", "max_model_len": 240, "layers": [
         {"type": "mla", "num_heads": 4, "num_kv_heads": 1, "head_size": 64, "head_size_v": 32},
         {"type": "full", "num_heads": 4, "num_kv_heads": 2, "head_size": 8}]},
       "cache": {"block_size": 24, "memory": "64KiB", "dtype": "float16"},
       "compilation": {"cudagraph_mode": "FULL_DECODE_ONLY", "capture_sizes": [1, 2, 4, 8]},
       "scheduler": {"max_num_seqs": 8, "max_num_batched_tokens": 48},
       "lora": {"capture_cases": [0, 2]}})",
};

// A config and its plan, made once per process: planning allocates CPU_FLASH's workspace (tens
// of MiB, zeroed), which per input would cap the target at ~30 inputs/s. The plan's metadata
// builders are reused across inputs; each build overwrites what they hold.
struct PlannedConfig {
  explicit PlannedConfig(std::string_view text)
      : config(load_config_text(text, "<fuzz step config>")),
        registry(backend_registry_for(config)),
        plan(plan_attention(config, registry)) {}

  EngineConfig config;
  BackendRegistry registry;
  AttentionPlan plan;
};

inline PlannedConfig& planned_config(int index) {
  static std::array<std::optional<PlannedConfig>, kStepConfigs.size()> planned;
  std::optional<PlannedConfig>& entry = planned[static_cast<std::size_t>(index)];
  if (!entry) entry.emplace(kStepConfigs[static_cast<std::size_t>(index)]);
  return *entry;
}

// The graph manager options the engine derives from a plan (engine.cc's graph_options).
inline CudaGraphManagerOptions engine_graph_options(const EngineConfig& config,
                                                    const AttentionPlan& plan) {
  CudaGraphManagerOptions options =
      CudaGraphManagerOptions::from_config(config, plan.cudagraph.mode);
  options.capture_sizes = plan.capture_sizes.sizes;
  options.max_capture_size = std::nullopt;
  if (plan.capture_sizes.max_capture_size > 0) {
    options.max_capture_size = plan.capture_sizes.max_capture_size;
  }
  options.decode_query_len = 1;
  return options;
}

// The per-step state, fresh for every input so that an input replays the same way whatever ran
// before it.
struct StepRig {
  explicit StepRig(PlannedConfig& planned)
      : config(planned.config),
        plan(planned.plan),
        tables(
            BlockTables::from_config(config, plan.kv.kv_cache_config, plan.backends.attn_groups)),
        batch(config.scheduler.max_num_seqs, config.scheduler.max_num_batched_tokens),
        graphs(engine_graph_options(config, plan)),
        metadata(plan.backends.attn_groups) {
    if (config.cache.kv_sharing_fast_prefill) {
      fast_prefill.emplace(config.scheduler.max_num_batched_tokens, graphs);
    }
  }
  StepRig(const StepRig&) = delete;
  StepRig& operator=(const StepRig&) = delete;

  // Whether KV cache group `g` receives kernel slots (translate_slot_mappings rewrites it).
  bool translated(int g) const {
    for (const AttentionGroup& group : plan.backends.attn_groups[static_cast<std::size_t>(g)]) {
      if (group.slot_mappings_translated) return true;
    }
    return false;
  }

  const EngineConfig& config;
  AttentionPlan& plan;  // shared by every input (PlannedConfig)
  BlockTables tables;
  InputBatch batch;
  CudaGraphManager graphs;
  std::optional<FastPrefillHelper> fast_prefill;
  AttentionMetadataByLayer metadata;
};

}  // namespace attnrt::fuzz
