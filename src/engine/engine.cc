// Engine start-up: the config with the options' overrides, the attention plan, the KV cache
// allocated and bound, the runner's persistent state, the model and the scheduler; then the
// FULL graphs are captured (engine_capture.cc).

#include "attnrt/engine/engine.h"

#include <optional>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/runner/tensor_parallel.h"
#include "captured_graphs.h"
#include "core/fail.h"
#include "engine_impl.h"
#include "engine_work.h"
#include "step_broadcast.h"

namespace attnrt {
namespace {

EngineConfig with_overrides(EngineConfig config, const EngineOptions& options) {
  if (options.fast_prefill) config.cache.kv_sharing_fast_prefill = *options.fast_prefill;
  if (options.cudagraph_mode) config.compilation.cudagraph_mode = *options.cudagraph_mode;
  if (options.backend) {
    for (LayerConfig& layer : config.model.layers) layer.backend = *options.backend;
  }
  for (std::size_t i = 0; i < config.model.layers.size(); ++i) {
    const LayerConfig& layer = config.model.layers[i];
    if (!layer.is_state_layer()) continue;
    fail(
        "engine: model.layers[{}] ({}) is a {} layer, and the built-in model has no state "
        "kernels; attnrt plan explains hybrid models, attnrt run needs attention layers only",
        i, layer.name, attention_type_name(layer.type));
  }
  if (config.speculative.num_speculative_tokens > 0) {
    fail(
        "engine: speculative.num_speculative_tokens is {}, but the engine has no drafter and "
        "samples one token per request and step; set it to 0 (attnrt plan explains speculative "
        "configs)",
        config.speculative.num_speculative_tokens);
  }
  return config;  // layer backend names are checked against the registry when planning
}

// The built-in backends with the options' bf16 products, and on ranks other than 0 those rank 0
// chose: the choice follows the CPU's features, and ranks on different machines must still round
// alike, or the tokens would depend on which rank computed which head.
BackendRegistry builtin_backends_for(const EngineOptions& options, Communicator& ranks) {
  CpuFlashOptions flash_options;
  if (options.bf16_products) flash_options.bf16_products = *options.bf16_products;
  BackendRegistry own =
      options.bf16_products ? make_builtin_backends(flash_options) : builtin_backends();
  const auto* flash = dynamic_cast<const CpuFlashBackend*>(own.find("CPU_FLASH").get());
  if (ranks.world() == 1 || flash == nullptr) return own;
  std::int64_t chosen[2] = {0, 0};  // decode on dot products, prefill in bf16
  if (ranks.rank() == 0) {
    chosen[0] = flash->bf16_products().dot_products ? 1 : 0;
    chosen[1] = flash->bf16_products().prefill_bf16 ? 1 : 0;
  }
  ranks.broadcast(std::as_writable_bytes(std::span(chosen)), 0);
  if (ranks.rank() == 0) return own;
  flash_options.bf16_products = chosen[0] != 0 ? Bf16Products::dot : Bf16Products::f32;
  flash_options.bf16_prefill_products = chosen[1] != 0 ? Bf16Products::dot : Bf16Products::f32;
  return make_builtin_backends(flash_options);
}

// The built-in backends plus the options' extra ones, then the GPU and config profiles over
// them (a config profile's kernel may name an extra backend).
BackendRegistry registry_for(const EngineConfig& config, const EngineOptions& options,
                             Communicator& ranks) {
  BackendRegistry executable = builtin_backends_for(options, ranks);
  for (const AttentionBackendPtr& backend : options.extra_backends) executable.add(backend);
  return make_backend_registry(config, executable);
}

AttentionPlan executable_plan(const EngineConfig& config, const BackendRegistry& registry) {
  AttentionPlan plan = plan_attention(config, registry);
  require_startup(plan.startup);  // where vLLM would refuse to start, so does the engine
  for (const AttentionLayer& layer : plan.kv.forward_context.layers()) {
    if (!layer.has_attn_backend()) continue;  // state and encoder-only layers
    const AttentionBackend& backend = *layer.get_attn_backend();
    if (!backend.executable()) {
      fail(
          "engine: layer {} uses backend {}, a plan-only profile that cannot execute attention "
          "here; give the profile a \"kernel\" (e.g. \"CPU_REFERENCE\") or choose an executable "
          "backend (attnrt plan still explains it)",
          layer.name(), backend.name());
    }
  }
  return plan;
}

// Every rank plans; when one fails, all stop with one line (check_every_rank) instead of the
// others waiting in the next collective.
AttentionPlan plan_on_every_rank(const EngineConfig& config, const BackendRegistry& registry,
                                 Communicator& communicator) {
  if (communicator.world() == 1) return executable_plan(config, registry);
  std::optional<AttentionPlan> plan;
  std::string failure;
  try {
    plan.emplace(executable_plan(config, registry));
  } catch (const Error& error) {
    failure = error.what();
  }
  check_every_rank(communicator, failure, "to plan attention");
  return std::move(*plan);
}

// vLLM's get_kv_cache_configs: the same groups on every rank, and the smallest block count.
std::int64_t agree_kv_blocks(const KVCachePlan& plan, Communicator& communicator) {
  const KVCachePlanSummary own = summarize_kv_cache_plan(plan);
  if (communicator.world() == 1) return own.num_blocks;
  const std::vector<std::string> texts =
      all_gather_strings(communicator, std::to_string(own.num_blocks) + "\n" + own.groups);
  std::vector<KVCachePlanSummary> ranks;
  for (const std::string& text : texts) {
    const std::size_t newline = text.find('\n');
    KVCachePlanSummary& summary = ranks.emplace_back();
    summary.num_blocks = std::stoll(text.substr(0, newline));
    summary.groups = text.substr(newline + 1);
  }
  return agree_kv_cache_plans(ranks);
}

// The scheduler hands out the agreed blocks only; a rank that planned more leaves the rest idle.
KVCacheConfig with_blocks(KVCacheConfig config, std::int64_t num_blocks) {
  config.num_blocks = num_blocks;
  return config;
}

KVCacheAllocation allocate_and_bind(const EngineConfig& config, AttentionPlan& plan) {
  KVCacheAllocation cache =
      allocate_kv_cache(plan.kv.kv_cache_config, Device::cpu(), plan.backends.kernel_block_sizes);
  bind_kv_caches(cache.views, plan.kv.forward_context, plan.kv.kv_cache_config, config,
                 plan.backends.attn_groups);
  return cache;
}

CudaGraphManagerOptions graph_options(const EngineConfig& config, const AttentionPlan& plan) {
  CudaGraphManagerOptions options =
      CudaGraphManagerOptions::from_config(config, plan.cudagraph.mode);
  // The sizes of the resolved mode (a config downgraded to NONE captures nothing).
  options.capture_sizes = plan.capture_sizes.sizes;
  options.max_capture_size = std::nullopt;
  if (plan.capture_sizes.max_capture_size > 0) {
    options.max_capture_size = plan.capture_sizes.max_capture_size;
  }
  options.decode_query_len = 1;  // one sampled token per request and step
  return options;
}

TinyTransformerOptions model_options(const EngineOptions& options, const AttentionPlan& plan) {
  TinyTransformerOptions model;
  model.seed = options.seed;
  model.weight_dtype = options.weight_dtype;
  model.fast_prefill_layers = plan.fast_prefill_layers;
  model.communicator = options.communicator;
  return model;
}

}  // namespace

Engine::Impl::Impl(const EngineConfig& config, EngineOptions options)
    : config_(with_overrides(config, options)),
      options_(std::move(options)),
      communicator_(options_.communicator != nullptr ? options_.communicator : &single_process_),
      registry_(registry_for(config_, options_, *communicator_)),
      plan_(plan_on_every_rank(config_, registry_, *communicator_)),
      agreed_kv_blocks_(agree_kv_blocks(plan_.kv, *communicator_)),
      model_(config_, plan_.kv.forward_context, model_options(options_, plan_)),
      kv_cache_(allocate_and_bind(config_, plan_)),
      block_tables_(
          BlockTables::from_config(config_, plan_.kv.kv_cache_config, plan_.backends.attn_groups)),
      batch_(config_.scheduler.max_num_seqs, config_.scheduler.max_num_batched_tokens),
      graphs_(graph_options(config_, plan_)),
      metadata_(plan_.backends.attn_groups),
      layer_groups_(
          std::make_unique<LayerGroupIndex>(plan_.kv.forward_context, plan_.backends.attn_groups)),
      captured_(std::make_unique<CapturedGraphs>()),
      work_(std::make_unique<LayerWorkModel>(model_)),
      scheduler_(config_, with_blocks(plan_.kv.kv_cache_config, agreed_kv_blocks_)) {
  if (communicator_->world() > 1) {
    step_broadcast_ = std::make_unique<StepBroadcast>(
        *communicator_, static_cast<int>(plan_.kv.kv_cache_config.kv_cache_groups.size()),
        config_.scheduler.max_num_seqs);
  }
  const auto max_tokens = static_cast<std::size_t>(config_.scheduler.max_num_batched_tokens);
  const auto max_reqs = static_cast<std::size_t>(config_.scheduler.max_num_seqs);
  if (config_.cache.kv_sharing_fast_prefill) {
    fast_prefill_.emplace(config_.scheduler.max_num_batched_tokens, graphs_);
  }
  scheduled_.reserve(max_reqs);
  token_ids_.assign(max_tokens, 0);
  all_padding_.assign(max_tokens, 1);
  eager_metadata_.assign(plan_.kv.forward_context.size(), nullptr);
  fast_prefill_positions_.assign(max_tokens, 0);
  sampled_.reserve(max_reqs);
  capture_graphs();
}

RequestId Engine::Impl::add_request(std::span<const std::int32_t> prompt, int max_tokens) {
  if (rank() != 0) {
    fail("engine: rank {} follows rank 0's scheduler; add requests on rank 0 only", rank());
  }
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= model_.vocab_size()) {
      fail("engine: prompt token {} is {}, outside the vocabulary of {} tokens", i, prompt[i],
           model_.vocab_size());
    }
  }
  const RequestId id = scheduler_.add_request(prompt, max_tokens);
  RequestRecord& record = records_.emplace_back();
  record.id = id;
  record.prompt.assign(prompt.begin(), prompt.end());
  record.output.reserve(static_cast<std::size_t>(max_tokens));
  return id;
}

void Engine::Impl::abort_request(RequestId id) {
  if (rank() != 0) fail("engine: rank {} has no requests to abort; abort on rank 0", rank());
  scheduler_.abort_request(id);  // throws for an id that is not queued or running
  records_[static_cast<std::size_t>(id)].aborted = true;
  ++num_aborted_;
}

int Engine::Impl::num_kv_blocks() const {
  return static_cast<int>(scheduler_.block_pool().num_blocks() - 1);
}

int Engine::Impl::num_kv_blocks_in_use() const {
  return num_kv_blocks() - scheduler_.block_pool().num_free();
}

Engine::Impl::~Impl() = default;

// The public class: one pointer to Impl, calls forwarded.
Engine::Engine(const EngineConfig& config, EngineOptions options)
    : impl_(std::make_unique<Impl>(config, std::move(options))) {}
Engine::~Engine() = default;

RequestId Engine::add_request(std::span<const std::int32_t> prompt, int max_tokens) {
  return impl_->add_request(prompt, max_tokens);
}
void Engine::abort_request(RequestId id) {
  impl_->abort_request(id);
}
bool Engine::step() {
  return impl_->step();
}
void Engine::run(const std::function<void(const Engine&)>& on_step) {
  while (step()) {
    if (on_step) on_step(*this);
  }
}
bool Engine::has_unfinished_requests() const {
  return impl_->scheduler_.has_unfinished_requests();
}

std::span<const RequestRecord> Engine::requests() const {
  return impl_->records_;
}
int Engine::num_finished() const {
  return impl_->num_finished_;
}
int Engine::num_aborted() const {
  return impl_->num_aborted_;
}
const EngineStats& Engine::stats() const {
  return impl_->stats_;
}
int Engine::num_kv_blocks_in_use() const {
  return impl_->num_kv_blocks_in_use();
}
int Engine::num_kv_blocks() const {
  return impl_->num_kv_blocks();
}

const EngineConfig& Engine::config() const {
  return impl_->config_;
}
Communicator& Engine::communicator() const {
  return *impl_->communicator_;
}
int Engine::rank() const {
  return impl_->rank();
}
std::int64_t Engine::agreed_kv_blocks() const {
  return impl_->agreed_kv_blocks_;
}
const AttentionPlan& Engine::plan() const {
  return impl_->plan_;
}
const CudaGraphManager& Engine::graph_manager() const {
  return impl_->graphs_;
}
std::size_t Engine::num_captured_graphs() const {
  return impl_->captured_->size();
}
const CapturedGraphs& Engine::captured_graphs() const {
  return *impl_->captured_;
}
const TinyTransformer& Engine::model() const {
  return impl_->model_;
}
const KVCacheAllocation& Engine::kv_cache() const {
  return impl_->kv_cache_;
}
const BatchExecutionDescriptor& Engine::last_descriptor() const {
  return impl_->descriptor_;
}
const Scheduler& Engine::scheduler() const {
  return impl_->scheduler_;
}
const BlockTables& Engine::block_tables() const {
  return impl_->block_tables_;
}
const InputBatch& Engine::input_batch() const {
  return impl_->batch_;
}

}  // namespace attnrt
