#pragma once
// Engine's state, out of the public header: the config with its overrides, the plan, the KV
// cache, the runner's persistent state (block tables, input batch, graph manager, fast-prefill
// helper, metadata), the model, the scheduler and the step buffers. It is the engine; the public
// class forwards to it (src/engine/engine.cc). Never moved: the registry's builders, the model and
// the helpers hold references into it.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "attnrt/engine/engine.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/fast_prefill_helper.h"
#include "core/hidden.h"

namespace attnrt {

class LayerGroupIndex;
class LayerWorkModel;
class StepBroadcast;

struct ATTNRT_HIDDEN Engine::Impl {
  Impl(const EngineConfig& config, EngineOptions options);
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // Engine's calls, as documented there (engine.cc, engine_step.cc).
  RequestId add_request(std::span<const std::int32_t> prompt, int max_tokens);
  void abort_request(RequestId id);
  bool step();
  int num_kv_blocks_in_use() const;
  int num_kv_blocks() const;
  int rank() const { return communicator_->rank(); }

  // Start-up (engine_capture.cc): FULL graphs built at their padded sizes, then mark_captured.
  void capture_graphs();
  void lay_out_capture_batch(const BatchExecutionDescriptor& descriptor);

  // One step (engine_step.cc).
  const SchedulerOutput* next_step_output();
  void apply_scheduler_output(const SchedulerOutput& output);
  void lay_out_batch(const SchedulerOutput& output);
  void map_slots(std::span<const std::uint8_t> is_padding);
  std::span<const AttentionMetadata* const> build_eager_metadata(
      const FastPrefillBatchMetadata* fast_prefill);
  void run_model(std::span<const AttentionMetadata* const> metadata,
                 const std::optional<FastPrefillBatchMetadata>& fast_prefill);
  void sample(const SchedulerOutput& output);
  void count_step(const SchedulerOutput& output, double step_seconds);
  void count_fast_prefill(const FastPrefillBatchMetadata& fast_prefill, double forward_seconds);

  EngineConfig config_;
  EngineOptions options_;
  SingleProcessCommunicator single_process_;
  Communicator* communicator_;
  BackendRegistry registry_;
  AttentionPlan plan_;
  std::int64_t agreed_kv_blocks_;  // before the model: ranks that disagree stop before building
  // Before the KV cache: the model refuses a config its weights or step buffers cannot hold
  // before gigabytes of cache are allocated and zeroed.
  TinyTransformer model_;
  KVCacheAllocation kv_cache_;
  BlockTables block_tables_;
  InputBatch batch_;
  CudaGraphManager graphs_;
  std::optional<FastPrefillHelper> fast_prefill_;
  AttentionMetadataByLayer metadata_;
  std::unique_ptr<const LayerGroupIndex> layer_groups_;
  std::unique_ptr<CapturedGraphs> captured_;
  std::unique_ptr<const LayerWorkModel> work_;
  Scheduler scheduler_;
  std::unique_ptr<StepBroadcast> step_broadcast_;  // world > 1

  // Persistent step buffers, sized at start-up.
  std::vector<ScheduledRequest> scheduled_;  // the batch's requests, as InputBatch takes them
  std::vector<std::int32_t> token_ids_;      // [max_num_batched_tokens]
  std::vector<std::uint8_t> all_padding_;    // capture: every row is padding (no slot written)
  std::vector<const AttentionMetadata*> eager_metadata_;  // per layer
  std::vector<std::int64_t> fast_prefill_positions_;      // positions of the fast-prefill rows
  std::vector<std::int32_t> sampled_;                     // per scheduled request
  BatchExecutionDescriptor descriptor_;
  double forward_seconds_ = 0;  // of the current step

  std::vector<RequestRecord> records_;  // by request id
  int num_finished_ = 0;
  int num_aborted_ = 0;
  EngineStats stats_;
};

}  // namespace attnrt
