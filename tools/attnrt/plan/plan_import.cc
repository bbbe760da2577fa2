// The Hugging Face import behind a plan, as text: one line per layer kind with the config fields
// that decided it, and what a key-only cache would save on K == V layers (the JSON is
// attnrt/runner/plan_json.h's).

#include <fmt/format.h>

#include "attnrt/config/config_loader.h"
#include "plan/plan_report.h"

namespace attnrt::cli {
namespace {

std::string kind_geometry(const ImportedLayerKind& kind, int tp) {
  if (kind.state) return kind.state->describe();
  std::string text =
      fmt::format("{} heads, {} KV heads ({} per rank), head {}", kind.num_heads, kind.num_kv_heads,
                  imported_kv_heads_per_rank(kind, tp), kind.head_size);
  if (kind.head_size_v != kind.head_size) text += fmt::format(", V head {}", kind.head_size_v);
  if (kind.sliding_window > 0) text += fmt::format(", window {}", kind.sliding_window);
  if (kind.attention_chunk_size > 0) text += fmt::format(", chunk {}", kind.attention_chunk_size);
  if (kind.sharing > 0) text += fmt::format(", {} sharing an earlier layer's KV", kind.sharing);
  if (kind.v_copies_k) text += ", V stored as a copy of K";
  return text;
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
      hf.v_copies_k_layers.size(), format_size(key_only_saving_bytes(hf, plan)));
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

}  // namespace attnrt::cli
