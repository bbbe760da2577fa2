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
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
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

// The CUDA-graph emulation (src/engine/captured_graphs.h), which captured_graphs() returns.
class CapturedGraphs;

struct EngineOptions {
  std::uint64_t seed = 0;  // names the model's weights
  DType weight_dtype = DType::f32;
  std::optional<bool> fast_prefill;             // overrides cache.kv_sharing_fast_prefill
  std::optional<CUDAGraphMode> cudagraph_mode;  // overrides compilation.cudagraph_mode
  std::optional<std::string> backend;           // every layer's backend
  // How CPU_FLASH multiplies bf16 caches; unset: the built-in default (Bf16Products::automatic).
  std::optional<Bf16Products> bf16_products;
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
  bool has_unfinished_requests() const;

  std::span<const RequestRecord> requests() const;
  int num_finished() const;
  int num_aborted() const;
  const EngineStats& stats() const;
  int num_kv_blocks_in_use() const;
  int num_kv_blocks() const;  // usable manager blocks (the null block excluded)

  const EngineConfig& config() const;  // with the options' overrides
  Communicator& communicator() const;
  int rank() const;
  // The KV blocks every rank uses (the smallest of the ranks' plans; the null block included).
  std::int64_t agreed_kv_blocks() const;
  const AttentionPlan& plan() const;
  const CudaGraphManager& graph_manager() const;
  std::size_t num_captured_graphs() const;
  // The captured graphs themselves (an internal type: src/engine/captured_graphs.h).
  const CapturedGraphs& captured_graphs() const;
  const TinyTransformer& model() const;
  const KVCacheAllocation& kv_cache() const;
  const BatchExecutionDescriptor& last_descriptor() const;
  // Read-only views of the step state, for consistency checks (the soak test): the requests and
  // their blocks, the block-table rows and slot mappings, and the last step's batch layout.
  const Scheduler& scheduler() const;
  const BlockTables& block_tables() const;
  const InputBatch& input_batch() const;

 private:
  // The plan, KV cache, runner state, model, scheduler and step buffers
  // (src/engine/engine_impl.h); the builders and the model keep references into it.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnrt
