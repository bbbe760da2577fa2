#pragma once
// Engine: the step loop of DESIGN.md §4 around the built-in model. Start-up plans attention,
// allocates and binds the KV cache, creates the block tables, input batch, graph manager and
// fast-prefill helper, and "captures" the FULL graphs (CapturedGraphs). Each step: schedule →
// release and append block-table rows → lay out the batch → dispatch a graph → pad → gather block
// tables and map slots → stage fast-prefill rows → metadata (FULL: replay the captured one;
// PIECEWISE / NONE: build) → model forward → greedy sampling → scheduler update.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/backend_registry.h"
#include "attnrt/core/export.h"
#include "attnrt/engine/communicator.h"
#include "attnrt/engine/engine_stats.h"
#include "attnrt/engine/scheduler.h"
#include "attnrt/engine/tiny_transformer.h"
#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/block_tables.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "attnrt/runner/fast_prefill_helper.h"
#include "attnrt/runner/input_batch.h"

namespace attnrt {

// The engine's private parts (src/engine/): the CUDA-graph emulation and the layer work model.
class CapturedGraphs;
class LayerGroupIndex;
class LayerWorkModel;
class StepBroadcast;

struct EngineOptions {
  std::uint64_t seed = 0;  // names the model's weights
  DType weight_dtype = DType::f32;
  std::optional<bool> fast_prefill;             // overrides cache.kv_sharing_fast_prefill
  std::optional<CUDAGraphMode> cudagraph_mode;  // overrides compilation.cudagraph_mode
  std::optional<std::string> backend;           // every layer's backend
  // Keep the logits row each generated token was sampled from (for a dense check).
  bool record_logits = false;
  // Backends added to the registry (tests: backends the built-in registry does not hold).
  std::vector<AttentionBackendPtr> extra_backends;
  // The tensor-parallel group this engine is one rank of (it must outlive the engine); null: one
  // rank. Every rank plans its share of the heads (parallel.tensor_parallel_size must be the
  // world), the ranks agree on the KV cache at start-up (agree_kv_cache_plans), rank 0 schedules
  // and broadcasts each step, and the others follow: call step() or run() on every rank, and
  // add requests on rank 0 only.
  Communicator* communicator = nullptr;
};

// One request as the engine saw it.
struct RequestRecord {
  RequestId id = 0;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> output;  // generated tokens, in order
  std::vector<float> logits;         // [output.size(), vocab] when record_logits
  bool finished = false;
  bool aborted = false;  // cancelled by abort_request; `output` holds what it generated until then
};

class ATTNRT_API Engine {
 public:
  // Throws Error for what cannot run: speculative tokens, a plan-only backend profile, a mode
  // with FULL graphs of prefill batches together with fast-prefill layers, anything the planner,
  // allocation, model or scheduler refuse.
  explicit Engine(const EngineConfig& config, EngineOptions options = {});
  Engine(const Engine&) = delete;  // builders and the model keep references into the engine
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // Queues a request (ids 0, 1, ... in order); see Scheduler::add_request for its errors.
  // Rank 0 only: the other ranks of a tensor-parallel group follow its scheduler.
  RequestId add_request(std::span<const std::int32_t> prompt, int max_tokens);
  // Cancels a queued or running request between steps (Scheduler::abort_request): its KV blocks
  // are free at once, its record is marked aborted. Throws Error, changing nothing, for an
  // unknown, finished or already aborted id.
  void abort_request(RequestId id);
  // Runs one step; false when no request is left (other ranks: when rank 0 said so).
  bool step();
  // Steps until every request finished, calling `on_step` after each step.
  void run(const std::function<void(const Engine&)>& on_step = {});
  bool has_unfinished_requests() const { return scheduler_.has_unfinished_requests(); }

  std::span<const RequestRecord> requests() const { return records_; }
  int num_finished() const { return num_finished_; }
  int num_aborted() const { return num_aborted_; }
  const EngineStats& stats() const { return stats_; }
  int num_kv_blocks_in_use() const;
  int num_kv_blocks() const;  // usable manager blocks (the null block excluded)

  const EngineConfig& config() const { return config_; }  // with the options' overrides
  Communicator& communicator() const { return *communicator_; }
  int rank() const { return communicator_->rank(); }
  // The KV blocks every rank uses (the smallest of the ranks' plans; the null block included).
  std::int64_t agreed_kv_blocks() const { return agreed_kv_blocks_; }
  const AttentionPlan& plan() const { return plan_; }
  const CudaGraphManager& graph_manager() const { return graphs_; }
  std::size_t num_captured_graphs() const;
  // The captured graphs themselves (an internal type: src/engine/captured_graphs.h).
  const CapturedGraphs& captured_graphs() const { return *captured_; }
  const TinyTransformer& model() const { return model_; }
  const KVCacheAllocation& kv_cache() const { return kv_cache_; }
  const BatchExecutionDescriptor& last_descriptor() const { return descriptor_; }
  // Read-only views of the step state, for consistency checks (the soak test): the requests and
  // their blocks, the block-table rows and slot mappings, and the last step's batch layout.
  const Scheduler& scheduler() const { return scheduler_; }
  const BlockTables& block_tables() const { return block_tables_; }
  const InputBatch& input_batch() const { return batch_; }

 private:
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
