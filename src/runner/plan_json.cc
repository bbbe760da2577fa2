// The stable JSON of a plan (docs/design.md §3): what `attnrt plan --json` prints and the Python
// module's Plan.to_dict() returns. Keys are stable, lists in execution order, null where vLLM
// says None.

#include "attnrt/runner/plan_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "attnrt/runner/vllm_kv_cache_log.h"

namespace attnrt {
namespace {

// A state group's state (SEMANTICS §4.4): its tensors, bytes and padding; null for attention.
nlohmann::json state_json(const KVCacheSpec& spec) {
  if (!spec.is_state()) return nullptr;
  nlohmann::json tensors = nlohmann::json::array();
  for (const StateTensor& tensor : spec.state_tensors) {
    tensors.push_back({{"shape", tensor.shape}, {"dtype", dtype_name(tensor.dtype)}});
  }
  return {{"tensors", tensors},
          {"bytes_per_request", spec.real_page_size_bytes()},
          {"padding_bytes", spec.page_size_bytes() - spec.real_page_size_bytes()},
          {"num_speculative_blocks", spec.num_speculative_blocks}};
}

nlohmann::json hybrid_json(const EngineConfig& config, const KVCachePlan& plan) {
  const BlocksPerRequest blocks = blocks_per_request(plan.kv_cache_config, config);
  nlohmann::json json = {
      {"blocks_per_request", {{"attention", blocks.attention}, {"state", blocks.state}}},
      {"max_concurrency_limited_by", blocks.limited_by()},
      {"enable_prefix_caching", config.cache.enable_prefix_caching},
      {"mamba_cache_mode", mamba_cache_mode_name(effective_mamba_cache_mode(config.cache))},
      {"alignment", nullptr}};
  if (const std::optional<HybridBlockSize>& hybrid = plan.hybrid_block_size) {
    json["alignment"] = {{"requested_block_size", hybrid->requested_block_size},
                         {"alignment", hybrid->alignment},
                         {"block_size", hybrid->block_size},
                         {"attention_bytes_per_token", hybrid->attention_bytes_per_token},
                         {"state_page_bytes", hybrid->state_page_bytes},
                         {"page_size_bytes", hybrid->page_size_bytes},
                         {"padding_bytes", hybrid->padding_bytes()},
                         {"messages", nlohmann::json::array()}};
    for (const auto& message : {hybrid->block_size_message(), hybrid->padding_message()}) {
      if (message) json["alignment"]["messages"].push_back(*message);
    }
  }
  return json;
}

// vLLM's charge for one request of max_model_len in this group: cdiv(max memory, page).
std::int64_t blocks_charged(const KVCacheSpec& spec, const EngineConfig& config) {
  const std::int64_t page = std::max<std::int64_t>(spec.page_size_bytes(), 1);
  const std::int64_t bytes = spec.max_memory_usage_bytes(config);
  return bytes / page + (bytes % page != 0 ? 1 : 0);
}

nlohmann::json vllm_log_json(const EngineConfig& config, const KVCachePlan& plan) {
  const VllmKvCacheLog log = vllm_kv_cache_log(plan, config);
  return {{"available_kv_cache_memory_gib", format_gib_as_vllm(log.available_bytes)},
          {"kv_cache_tokens", log.kv_cache_tokens},
          {"kv_cache_tokens_v0_19", log.kv_cache_tokens_v0_19},
          {"max_concurrency", log.max_concurrency},
          {"lines", vllm_kv_cache_log_lines(log)}};
}

nlohmann::json kv_cache_json(const EngineConfig& config, const AttentionPlan& attention) {
  const KVCachePlan& plan = attention.kv;
  const KVCacheConfig& kv = plan.kv_cache_config;
  nlohmann::json groups = nlohmann::json::array();
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    const KVCacheGroupSpec& group = kv.kv_cache_groups[g];
    groups.push_back({{"id", g},
                      {"kind", attention_type_name(group.kv_cache_spec.kind)},
                      {"layer_names", group.layer_names},
                      {"block_size", group.kv_cache_spec.block_size},
                      {"page_size_bytes", group.kv_cache_spec.page_size_bytes()},
                      {"kernel_block_size", attention.backends.kernel_block_sizes.at(g)},
                      // The block-table row's width; what a request is charged (vLLM's
                      // concurrency) is smaller for windows, chunks and states.
                      {"blocks_per_request",
                       group.kv_cache_spec.max_num_blocks_per_req(config.model.max_model_len)},
                      {"block_table_width",
                       group.kv_cache_spec.max_num_blocks_per_req(config.model.max_model_len)},
                      {"blocks_charged_per_request", blocks_charged(group.kv_cache_spec, config)},
                      {"state", state_json(group.kv_cache_spec)},
                      {"spec", group.kv_cache_spec.describe()}});
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const KVCacheTensor& tensor : kv.kv_cache_tensors) {
    tensors.push_back({{"size", tensor.size},
                       {"layers", tensor.layers},
                       {"layer_stride", tensor.layer_stride},
                       {"block_stride", tensor.block_stride},
                       {"offset", tensor.offset}});
  }
  return {{"num_blocks", kv.num_blocks},
          {"block_size", plan.attention_block_size},
          {"layout", layout_name(kv.kv_cache_layout)},
          {"dtype", dtype_name(config.cache.dtype)},
          {"bytes_total", kv.backing_bytes()},
          {"tokens_capacity", tokens_capacity(kv)},
          {"max_concurrency", max_concurrency(kv, config)},
          {"available_bytes", plan.capacity.available_bytes},
          {"max_model_len_request_bytes", plan.capacity.needed_bytes},
          {"fits_max_model_len", plan.capacity.fits},
          {"estimated_max_model_len", plan.capacity.estimated_max_model_len},
          {"hybrid", hybrid_json(config, plan)},
          {"vllm_log", vllm_log_json(config, plan)},
          {"groups", groups},
          {"tensors", tensors}};
}

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json attention_groups_json(const AttentionPlan& plan) {
  nlohmann::json per_kv_group = nlohmann::json::array();
  for (const std::vector<AttentionGroup>& groups : plan.backends.attn_groups) {
    nlohmann::json list = nlohmann::json::array();
    for (const AttentionGroup& group : groups) {
      const AttentionLayer& first = plan.kv.forward_context.at(group.layer_names.front());
      list.push_back({{"backend", group.backend->name()},
                      {"layer_names", group.layer_names},
                      {"kv_cache_group_id", group.kv_cache_group_id},
                      {"num_heads_q", first.num_heads()},
                      {"fast_prefill", plan.fast_prefill_layers.contains(first.name())}});
    }
    per_kv_group.push_back(std::move(list));
  }
  return per_kv_group;
}

nlohmann::json cudagraph_json(const AttentionPlan& plan) {
  return {{"min_cg_support", cg_support_name(plan.backends.cg_support.min_cg_support)},
          {"min_cg_attn_backend", or_null(plan.backends.cg_support.min_cg_attn_backend)},
          {"requested_mode", plan.requested_mode.name()},
          {"resolved_mode", plan.cudagraph.mode.name()},
          {"messages", plan.cudagraph.messages},
          {"capture_sizes", plan.capture_sizes.sizes}};
}

nlohmann::json startup_json(const StartupVerdict& verdict) {
  return {{"starts", verdict.starts()}, {"reasons", verdict.reasons}};
}

nlohmann::json checks_json(const AttentionPlan& plan) {
  nlohmann::json varlen = nullptr;
  if (const auto& failing = plan.checks.varlen_cudagraph_unsupported_backend) {
    varlen = {{"backend", failing->backend}, {"bound", or_null(failing->bound)}};
  }
  return {{"query_lens_mismatch_unsupported_backend",
           or_null(plan.checks.query_lens_mismatch_unsupported_backend)},
          {"varlen_cudagraph_unsupported_backend", varlen},
          {"varlen_query_len", plan.checks.varlen_query_len}};
}

// A state layer's typed views of its page (SEMANTICS §4.4); null for attention layers.
nlohmann::json state_views_json(const LayerViewGeometry& view) {
  if (view.states.empty()) return nullptr;
  nlohmann::json states = nlohmann::json::array();
  for (const StateViewGeometry& state : view.states) {
    states.push_back({{"offset_bytes", state.byte_offset},
                      {"shape", state.shape},
                      {"strides", state.strides},
                      {"dtype", dtype_name(state.dtype)}});
  }
  return states;
}

}  // namespace

int imported_kv_heads_per_rank(const ImportedLayerKind& kind, int tp) {
  if (kind.type == AttentionType::mla) return 1;  // the latent is replicated on every rank
  return kind.num_kv_heads >= tp ? kind.num_kv_heads / tp : 1;
}

// Bytes the K == V layers' V halves take in this plan: what a key-only cache would not hold.
std::uint64_t key_only_saving_bytes(const HfImport& hf, const AttentionPlan& plan) {
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  if (hf.v_copies_k_layers.empty() || kv.kv_cache_groups.empty()) return 0;
  const auto page =
      static_cast<std::uint64_t>(kv.kv_cache_groups.front().kv_cache_spec.page_size_bytes());
  return hf.v_copies_k_layers.size() * static_cast<std::uint64_t>(kv.num_blocks) * page / 2;
}

std::vector<LayerBinding> layer_bindings(const KVCachePlan& plan) {
  std::unordered_map<std::string_view, const LayerViewGeometry*> view_of;
  view_of.reserve(plan.views.size());
  for (const LayerViewGeometry& view : plan.views) view_of.emplace(view.layer, &view);
  std::unordered_map<std::string_view, const std::string*> target_of;
  for (const auto& [layer, target] : plan.shared_layers) target_of.emplace(layer, &target);
  std::vector<LayerBinding> bindings;
  bindings.reserve(plan.forward_context.size());
  for (const AttentionLayer& layer : plan.forward_context.layers()) {
    const auto target = target_of.find(layer.name());
    const std::string* owner = target == target_of.end() ? &layer.name() : target->second;
    const auto view = view_of.find(*owner);
    if (view == view_of.end()) continue;  // encoder-only layers keep no cache
    bindings.push_back({&layer.name(), owner, view->second});
  }
  return bindings;
}

std::vector<std::string> ordered_layers(const AttentionPlan& plan,
                                        const std::set<std::string>& names) {
  std::vector<std::string> ordered;
  for (const AttentionLayer& layer : plan.kv.forward_context.layers()) {
    if (names.contains(layer.name())) ordered.push_back(layer.name());
  }
  return ordered;
}

namespace {

nlohmann::json device_budget_json(const DeviceBudget& budget) {
  nlohmann::json parts = nlohmann::json::array();
  for (const WeightComponent& part : budget.weights.components) {
    parts.push_back({{"name", part.name}, {"parameters", part.parameters}, {"bytes", part.bytes}});
  }
  return {{"device_memory_bytes", budget.request.device_memory},
          {"gpu_memory_utilization", budget.request.gpu_memory_utilization},
          {"usable_bytes", budget.usable_bytes},
          {"reserve_bytes", budget.request.reserve},
          {"weight_bytes", budget.weights.total_bytes},
          {"weight_parameters", budget.weights.total_parameters},
          {"weight_storage", budget.weights.storage},
          {"weights", parts},
          {"not_counted", budget.weights.not_counted},
          {"kv_cache_bytes", budget.kv_cache_bytes}};
}

nlohmann::json import_json(const HfImport& hf, const AttentionPlan& plan) {
  const int tp = hf.config.parallel.tensor_parallel_size;
  nlohmann::json kinds = nlohmann::json::array();
  for (const ImportedLayerKind& kind : hf.kinds) {
    kinds.push_back({{"type", attention_type_name(kind.type)},
                     {"state", kind.state ? nlohmann::json(kind.state->describe()) : nullptr},
                     {"count", kind.count},
                     {"num_heads", kind.num_heads},
                     {"num_kv_heads", kind.num_kv_heads},
                     {"num_kv_heads_per_rank", imported_kv_heads_per_rank(kind, tp)},
                     {"head_size", kind.head_size},
                     {"head_size_v", kind.head_size_v},
                     {"sliding_window", kind.sliding_window},
                     {"attention_chunk_size", kind.attention_chunk_size},
                     {"sharing", kind.sharing},
                     {"v_copies_k", kind.v_copies_k},
                     {"decided_by", kind.decided_by}});
  }
  return {{"model_type", hf.model_type},
          {"architecture", hf.architecture},
          {"dtype", dtype_name(hf.model_dtype)},
          {"derived_max_model_len", hf.derived_max_model_len},
          {"max_len_source", hf.max_len_source},
          {"layer_kinds", kinds},
          {"v_copies_k_layers", hf.v_copies_k_layers},
          {"key_only_saving_bytes", key_only_saving_bytes(hf, plan)},
          {"notes", hf.notes}};
}

nlohmann::json bindings_json(const KVCachePlan& plan) {
  nlohmann::json bindings = nlohmann::json::array();
  for (const LayerBinding& b : layer_bindings(plan)) {
    bindings.push_back({{"layer", *b.layer},
                        {"buffer", 0},
                        {"offset_bytes", b.view->byte_offset},
                        {"shape", b.view->shape},
                        {"strides", b.view->strides},
                        {"dtype", dtype_name(b.view->dtype)},
                        {"states", state_views_json(*b.view)},
                        {"shares_with", b.shares() ? nlohmann::json(*b.owner) : nlohmann::json()}});
  }
  return bindings;
}

}  // namespace

std::string plan_json_text(const EngineConfig& config, const AttentionPlan& plan,
                           const PlanJsonExtras& extras, int indent) {
  nlohmann::json json = {{"model",
                          {{"name", config.model.name},
                           {"num_layers", config.model.layers.size()},
                           {"max_model_len", config.model.max_model_len},
                           {"tensor_parallel_size", config.parallel.tensor_parallel_size}}},
                         {"kv_cache", kv_cache_json(config, plan)},
                         {"attention_groups", attention_groups_json(plan)},
                         {"cudagraph", cudagraph_json(plan)},
                         {"fast_prefill",
                          {{"enabled", config.cache.kv_sharing_fast_prefill},
                           {"eligible_layers", ordered_layers(plan, plan.fast_prefill_layers)}}},
                         {"checks", checks_json(plan)},
                         {"startup", startup_json(plan.startup)},
                         {"bindings", bindings_json(plan.kv)}};
  if (extras.hf != nullptr) json["model"]["import"] = import_json(*extras.hf, plan);
  if (extras.device != nullptr)
    json["kv_cache"]["device_budget"] = device_budget_json(*extras.device);
  return json.dump(indent);
}

}  // namespace attnrt
