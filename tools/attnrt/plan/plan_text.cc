// The readable summary of `attnrt plan`: one section per decision, bindings last.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "attnrt/config/config_loader.h"
#include "attnrt/runner/vllm_kv_cache_log.h"
#include "kernel_summary.h"
#include "plan/plan_report.h"

namespace attnrt::cli {
namespace {

class TextOut {
 public:
  template <typename... Args>
  void line(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(text_), format, std::forward<Args>(args)...);
    text_ += '\n';
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

// "model.layers.{0,2,4}.self_attn" for names that differ only in the middle; a plain list
// otherwise.
std::string compact_names(const std::vector<std::string>& names) {
  if (names.size() < 2) return fmt::format("{}", fmt::join(names, ", "));
  std::size_t prefix = names.front().size(), suffix = names.front().size();
  for (const std::string& name : names) {
    const std::string& first = names.front();
    std::size_t p = 0;
    while (p < prefix && p < name.size() && name[p] == first[p]) ++p;
    prefix = p;
    std::size_t s = 0;
    while (s < suffix && s < name.size() &&
           name[name.size() - 1 - s] == first[first.size() - 1 - s])
      ++s;
    suffix = s;
  }
  // Never cut through a number: "layers.2{0,1}" would read as a different name.
  const std::string& first = names.front();
  while (prefix > 0 && std::isdigit(static_cast<unsigned char>(first[prefix - 1]))) --prefix;
  while (suffix > 0 && std::isdigit(static_cast<unsigned char>(first[first.size() - suffix])))
    --suffix;
  std::vector<std::string> middles;
  for (const std::string& name : names) {
    if (prefix + suffix > name.size()) return fmt::format("{}", fmt::join(names, ", "));
    middles.push_back(name.substr(prefix, name.size() - prefix - suffix));
  }
  return fmt::format("{}{{{}}}{}", names.front().substr(0, prefix), fmt::join(middles, ","),
                     names.front().substr(names.front().size() - suffix));
}

// A hybrid model: how its blocks were aligned, and what a request holds (SEMANTICS §4.4).
void hybrid_lines(TextOut& out, const EngineConfig& config, const KVCachePlan& plan) {
  const KVCacheConfig& kv = plan.kv_cache_config;
  const bool has_state = std::ranges::any_of(
      kv.kv_cache_groups, [](const KVCacheGroupSpec& g) { return g.kv_cache_spec.is_state(); });
  if (!has_state) return;
  if (const std::optional<HybridBlockSize>& hybrid = plan.hybrid_block_size) {
    out.line(
        "  hybrid: attention block size {} requested, {} after alignment to multiples of {}, so "
        "that an attention page ({} per token) holds a state page ({}); state pages padded by {} "
        "({:.2f}%)",
        hybrid->requested_block_size, hybrid->block_size, hybrid->alignment,
        format_size(static_cast<std::uint64_t>(hybrid->attention_bytes_per_token)),
        format_size(static_cast<std::uint64_t>(hybrid->state_page_bytes)),
        format_size(static_cast<std::uint64_t>(hybrid->padding_bytes())),
        100.0 * static_cast<double>(hybrid->padding_bytes()) /
            static_cast<double>(hybrid->state_page_bytes));
  }
  const BlocksPerRequest blocks = blocks_per_request(kv, config);
  const MambaCacheMode mode = effective_mamba_cache_mode(config.cache);
  out.line(
      "  per request of {} tokens: {} attention blocks + {} state blocks (mamba_cache_mode {}, "
      "prefix caching {}: {} per request and state group, plus one per draft token); {} limit "
      "the concurrency",
      config.model.max_model_len, blocks.attention, blocks.state, mamba_cache_mode_name(mode),
      config.cache.enable_prefix_caching ? "on" : "off", mode == MambaCacheMode::align ? 2 : 1,
      blocks.limited_by());
}

void kv_cache_section(TextOut& out, const EngineConfig& config, const AttentionPlan& plan,
                      const std::optional<KVCachePlan>& without_sharing) {
  const KVCacheConfig& kv = plan.kv.kv_cache_config;
  out.line("KV cache: {} budget per rank, {} cache, layout {}", format_size(config.cache.memory),
           dtype_name(config.cache.dtype), layout_name(kv.kv_cache_layout));
  out.line(
      "  {} blocks of {} tokens ({} in use), {} tokens per layer, max concurrency {:.2f} at {} "
      "tokens",
      kv.num_blocks, plan.kv.attention_block_size, format_size(kv.backing_bytes()),
      tokens_capacity(kv), max_concurrency(kv, config), config.model.max_model_len);
  hybrid_lines(out, config, plan.kv);
  const KVCacheCapacity& capacity = plan.kv.capacity;
  if (capacity.fits) {
    out.line("  fits: one request of {} tokens needs {} of KV cache; {} available",
             capacity.max_model_len, format_size(static_cast<std::uint64_t>(capacity.needed_bytes)),
             format_size(capacity.available_bytes));
  } else {
    out.line("  does not fit: {}", capacity.message());
  }
  for (const std::string& line : vllm_kv_cache_log_lines(vllm_kv_cache_log(plan.kv, config))) {
    out.line("  vLLM logs: {}", line);
  }
  const std::map<std::string, std::string> targets(plan.kv.shared_layers.begin(),
                                                   plan.kv.shared_layers.end());
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    const KVCacheGroupSpec& group = kv.kv_cache_groups[g];
    std::vector<std::string> owning, sharing;
    for (const std::string& name : group.layer_names) {
      (targets.contains(name) ? sharing : owning).push_back(name);
    }
    out.line("  group {}: {}, {} layers, kernel block {}", g, group.kv_cache_spec.describe(),
             group.layer_names.size(), plan.backends.kernel_block_sizes.at(g));
    out.line("    owning  {}", compact_names(owning));
    if (!sharing.empty()) out.line("    sharing {}", compact_names(sharing));
  }
  if (kv.kv_cache_groups.size() > 1) {
    out.line(
        "  the groups overlay one backing: layer slot l of every group uses the same bytes, "
        "and a block id belongs to one group at a time");
  }
  if (without_sharing) {
    const std::int64_t plain = tokens_capacity(without_sharing->kv_cache_config);
    out.line(
        "KV sharing: {} layers read an earlier layer's cache; without sharing the budget holds "
        "{} tokens per layer, with sharing {} (x{:.2f})",
        plan.kv.shared_layers.size(), plain, tokens_capacity(kv),
        static_cast<double>(tokens_capacity(kv)) /
            static_cast<double>(std::max<std::int64_t>(1, plain)));
  } else if (!plan.kv.shared_layers.empty()) {
    out.line(
        "KV sharing: {} layers read an earlier layer's cache; without sharing the budget would "
        "not hold one block per layer slot",
        plan.kv.shared_layers.size());
  }
}

void attention_section(TextOut& out, const AttentionPlan& plan) {
  out.line("attention groups:");
  for (const std::vector<AttentionGroup>& groups : plan.backends.attn_groups) {
    for (const AttentionGroup& group : groups) {
      const AttentionLayer& first = plan.kv.forward_context.at(group.layer_names.front());
      out.line("  kv group {}: {} x{} ({} query heads) {}", group.kv_cache_group_id,
               group.backend->name(), group.layer_names.size(), first.num_heads(),
               compact_names(group.layer_names));
    }
  }
  const std::string kernels = cpu_flash_summary(plan);
  if (!kernels.empty()) out.line("{}", kernels);
}

void cudagraph_section(TextOut& out, const AttentionPlan& plan) {
  const AttentionCGSupportInfo& support = plan.backends.cg_support;
  const std::string limiter =
      support.min_cg_attn_backend
          ? fmt::format("{} limits FULL graphs to {}", *support.min_cg_attn_backend,
                        cg_support_name(support.min_cg_support))
          : std::string("every backend replays FULL graphs for any batch (ALWAYS)");
  out.line("CUDA graphs: requested {}, resolved {}; {}", plan.requested_mode.name(),
           plan.cudagraph.mode.name(), limiter);
  for (const std::string& message : plan.cudagraph.messages) out.line("  {}", message);
  if (!plan.capture_sizes.sizes.empty()) {
    out.line("  capture sizes {}", fmt::join(plan.capture_sizes.sizes, ","));
  }
}

void checks_section(TextOut& out, const EngineConfig& config, const AttentionPlan& plan) {
  const std::vector<std::string> eligible = ordered_layers(plan, plan.fast_prefill_layers);
  out.line("fast prefill: {}{}", config.cache.kv_sharing_fast_prefill ? "on" : "off",
           eligible.empty()
               ? std::string()
               : fmt::format(", trailing KV-sharing layers {}", compact_names(eligible)));
  const SpeculativeChecks& checks = plan.checks;
  out.line(
      "checks over the target layers (varlen width {}): query-length mismatch {}, varlen "
      "graphs {}",
      checks.varlen_query_len,
      checks.query_lens_mismatch_unsupported_backend
          ? "unsupported by " + *checks.query_lens_mismatch_unsupported_backend
          : std::string("ok"),
      checks.varlen_cudagraph_unsupported_backend
          ? fmt::format("unsupported by {} (bound {})",
                        checks.varlen_cudagraph_unsupported_backend->backend,
                        checks.varlen_cudagraph_unsupported_backend->bound
                            ? std::to_string(*checks.varlen_cudagraph_unsupported_backend->bound)
                            : std::string("none"))
          : std::string("ok"));
}

}  // namespace

std::string plan_to_text(const EngineConfig& config, const AttentionPlan& plan,
                         const std::optional<KVCachePlan>& without_sharing,
                         const PlanExtras& extras) {
  TextOut out;
  const auto state_layers = std::ranges::count_if(
      config.model.layers, [](const LayerConfig& layer) { return layer.is_state_layer(); });
  out.line("model {}: {} attention layers{}, max_model_len {}, tensor parallel {}",
           config.model.name, config.model.layers.size() - static_cast<std::size_t>(state_layers),
           state_layers > 0 ? fmt::format(" and {} state layers", state_layers) : std::string(),
           config.model.max_model_len, config.parallel.tensor_parallel_size);
  if (extras.hf != nullptr) {
    for (const std::string& line : import_lines(*extras.hf, config.parallel.tensor_parallel_size)) {
      out.line("{}", line);
    }
  }
  if (extras.device != nullptr) {
    for (const std::string& line : device_budget_lines(*extras.device)) out.line("{}", line);
  }
  kv_cache_section(out, config, plan, without_sharing);
  if (extras.hf != nullptr && !extras.hf->v_copies_k_layers.empty()) {
    out.line("{}", key_only_line(*extras.hf, plan));
  }
  attention_section(out, plan);
  cudagraph_section(out, plan);
  checks_section(out, config, plan);
  out.line("bindings:");
  for (const LayerBinding& b : layer_bindings(plan.kv)) {
    const LayerViewGeometry& v = *b.view;
    out.line("  {:<40} offset {:>14}  {}[{}]  strides [{}]{}", *b.layer, v.byte_offset,
             dtype_name(v.dtype), fmt::join(v.shape, ","), fmt::join(v.strides, ","),
             b.shares() ? "  (shares " + *b.owner + ")" : std::string());
  }
  // The verdict comes last, after the whole plan, as vLLM stops after planning.
  if (plan.startup.starts()) {
    out.line("startup: vLLM would start");
  } else {
    out.line("startup: vLLM would refuse to start:");
    for (const std::string& reason : plan.startup.reasons) out.line("  {}", reason);
  }
  return out.take();
}

}  // namespace attnrt::cli
