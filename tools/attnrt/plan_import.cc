// The Hugging Face import behind a plan: one line (or JSON object) per layer kind, with the
// config fields that decided it, and what a key-only cache would save on K == V layers.

#include <fmt/format.h>

#include "attnrt/config/config_loader.h"
#include "plan_report.h"

namespace attnrt::cli {
namespace {

int kv_heads_per_rank(const ImportedLayerKind& kind, int tp) {
  if (kind.type == AttentionType::mla) return 1;  // the latent is replicated on every rank
  return kind.num_kv_heads >= tp ? kind.num_kv_heads / tp : 1;
}

std::string kind_geometry(const ImportedLayerKind& kind, int tp) {
  if (kind.state) return kind.state->describe();
  std::string text = fmt::format("{} heads, {} KV heads ({} per rank), head {}", kind.num_heads,
                                 kind.num_kv_heads, kv_heads_per_rank(kind, tp), kind.head_size);
  if (kind.head_size_v != kind.head_size) text += fmt::format(", V head {}", kind.head_size_v);
  if (kind.sliding_window > 0) text += fmt::format(", window {}", kind.sliding_window);
  if (kind.attention_chunk_size > 0) text += fmt::format(", chunk {}", kind.attention_chunk_size);
  if (kind.sharing > 0) text += fmt::format(", {} sharing an earlier layer's KV", kind.sharing);
  if (kind.v_copies_k) text += ", V stored as a copy of K";
  return text;
}

// Bytes the K == V layers' V halves take in this plan: what a key-only cache would not hold.
std::uint64_t key_only_saving(const HfImport& hf, const AttentionPlan& plan) {
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  if (hf.v_copies_k_layers.empty() || kv.kv_cache_groups.empty()) return 0;
  const auto page =
      static_cast<std::uint64_t>(kv.kv_cache_groups.front().kv_cache_spec.page_size_bytes());
  return hf.v_copies_k_layers.size() * static_cast<std::uint64_t>(kv.num_blocks) * page / 2;
}

}  // namespace

std::vector<std::string> import_lines(const HfImport& hf, int tensor_parallel_size) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "imported from Hugging Face config: model_type {}{}, dtype {}, "
      "max length {} ({})",
      hf.model_type, hf.architecture.empty() ? "" : fmt::format(" ({})", hf.architecture),
      dtype_name(hf.model_dtype), hf.derived_max_model_len, hf.max_len_source));
  for (const ImportedLayerKind& kind : hf.kinds) {
    lines.push_back(fmt::format("  {} x{}: {}  [{}]", attention_type_name(kind.type), kind.count,
                                kind_geometry(kind, tensor_parallel_size), kind.decided_by));
  }
  for (const std::string& note : hf.notes) lines.push_back(fmt::format("  note: {}", note));
  return lines;
}

std::string key_only_line(const HfImport& hf, const AttentionPlan& plan) {
  if (hf.v_copies_k_layers.empty()) return {};
  return fmt::format(
      "K == V: {} layers store V as a copy of K (as vLLM does); a key-only cache would save {} "
      "of this plan",
      hf.v_copies_k_layers.size(), format_size(key_only_saving(hf, plan)));
}

std::vector<std::string> device_budget_lines(const DeviceBudget& budget) {
  const DeviceBudgetRequest& request = budget.request;
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "device budget per rank: {} x {} = {}, less weights {} and reserve {}: KV cache {}",
      format_size(request.device_memory), request.gpu_memory_utilization,
      format_size(budget.usable_bytes), format_size(budget.weights.total_bytes),
      format_size(request.reserve), format_size(budget.kv_cache_bytes)));
  std::string parts;
  for (const WeightComponent& part : budget.weights.components) {
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", part.name, format_size(part.bytes));
  }
  lines.push_back(fmt::format("  weights: {:.2f} B parameters, {}: {}",
                              static_cast<double>(budget.weights.total_parameters) / 1e9,
                              budget.weights.storage, parts));
  for (const std::string& skipped : budget.weights.not_counted) {
    lines.push_back(fmt::format("  not counted: {}", skipped));
  }
  return lines;
}

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
                     {"num_kv_heads_per_rank", kv_heads_per_rank(kind, tp)},
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
          {"key_only_saving_bytes", key_only_saving(hf, plan)},
          {"notes", hf.notes}};
}

}  // namespace attnrt::cli
