#include "plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <map>

#include "attnrt/config/config_loader.h"

namespace attnrt::cli {
namespace {

std::map<std::string, std::string> sharing_targets(const KVCachePlan& plan) {
  return {plan.shared_layers.begin(), plan.shared_layers.end()};
}

int kernel_block_size_of(const LayerViewGeometry* view, const KVCacheGroupSpec& group) {
  return view ? view->geometry.kernel_block_size : group.kv_cache_spec.block_size;
}

const LayerViewGeometry* first_view_of_group(const KVCachePlan& plan, int group_id) {
  for (const LayerViewGeometry& view : plan.views) {
    if (view.group_id == group_id) return &view;
  }
  return nullptr;
}

nlohmann::json kv_cache_json(const EngineConfig& config, const KVCachePlan& plan) {
  const KVCacheConfig& kv = plan.kv_cache_config;
  nlohmann::json groups = nlohmann::json::array();
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    const KVCacheGroupSpec& group = kv.kv_cache_groups[g];
    groups.push_back({{"id", g},
                      {"kind", spec_kind_name(group.kv_cache_spec.kind)},
                      {"layer_names", group.layer_names},
                      {"block_size", group.kv_cache_spec.block_size},
                      {"page_size_bytes", group.kv_cache_spec.page_size_bytes()},
                      {"kernel_block_size",
                       kernel_block_size_of(first_view_of_group(plan, static_cast<int>(g)), group)},
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
          {"block_size", config.cache.block_size},
          {"layout", layout_name(kv.kv_cache_layout)},
          {"dtype", dtype_name(config.cache.dtype)},
          {"bytes_total", kv.backing_bytes()},
          {"tokens_capacity", tokens_capacity(kv)},
          {"max_concurrency", max_concurrency(kv, config)},
          {"groups", groups},
          {"tensors", tensors}};
}

nlohmann::json bindings_json(const KVCachePlan& plan) {
  std::map<std::string, const LayerViewGeometry*> view_of;
  for (const LayerViewGeometry& view : plan.views) view_of[view.layer] = &view;
  const auto targets = sharing_targets(plan);
  nlohmann::json bindings = nlohmann::json::array();
  for (const AttentionLayer& layer : plan.forward_context.layers()) {
    auto target = targets.find(layer.name());
    const std::string& owner = target == targets.end() ? layer.name() : target->second;
    auto view = view_of.find(owner);
    if (view == view_of.end()) continue;  // encoder-only layers keep no cache
    const LayerViewGeometry& v = *view->second;
    bindings.push_back({{"layer", layer.name()},
                        {"buffer", 0},
                        {"offset_bytes", v.byte_offset},
                        {"shape", v.shape},
                        {"strides", v.strides},
                        {"dtype", dtype_name(v.dtype)},
                        {"shares_with", target == targets.end() ? nlohmann::json(nullptr)
                                                                : nlohmann::json(owner)}});
  }
  return bindings;
}

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

}  // namespace

nlohmann::json plan_to_json(const EngineConfig& config, const KVCachePlan& plan) {
  return {{"model",
           {{"name", config.model.name},
            {"num_layers", config.model.layers.size()},
            {"max_model_len", config.model.max_model_len},
            {"tensor_parallel_size", config.parallel.tensor_parallel_size}}},
          {"kv_cache", kv_cache_json(config, plan)},
          {"bindings", bindings_json(plan)}};
}

std::string plan_to_text(const EngineConfig& config, const KVCachePlan& plan,
                         const std::optional<KVCachePlan>& without_sharing) {
  const KVCacheConfig& kv = plan.kv_cache_config;
  std::string out;
  auto line = [&out]<typename... Args>(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
    out += '\n';
  };
  line("model {}: {} attention layers, max_model_len {}, tensor parallel {}", config.model.name,
       config.model.layers.size(), config.model.max_model_len,
       config.parallel.tensor_parallel_size);
  line("KV cache: {} budget per rank, {} cache, layout {}", format_size(config.cache.memory),
       dtype_name(config.cache.dtype), layout_name(kv.kv_cache_layout));
  line(
      "  {} blocks of {} tokens ({} per rank in use), {} tokens per layer, max concurrency {:.2f} "
      "at {} tokens",
      kv.num_blocks, config.cache.block_size, format_size(kv.backing_bytes()), tokens_capacity(kv),
      max_concurrency(kv, config), config.model.max_model_len);
  for (std::size_t g = 0; g < kv.kv_cache_groups.size(); ++g) {
    const KVCacheGroupSpec& group = kv.kv_cache_groups[g];
    const auto targets = sharing_targets(plan);
    std::vector<std::string> owning, sharing;
    for (const std::string& name : group.layer_names) {
      (targets.contains(name) ? sharing : owning).push_back(name);
    }
    line("  group {}: {}, {} layers", g, group.kv_cache_spec.describe(), group.layer_names.size());
    line("    owning  {}", compact_names(owning));
    if (!sharing.empty()) line("    sharing {}", compact_names(sharing));
  }
  if (kv.kv_cache_groups.size() > 1) {
    line(
        "  the groups overlay one backing: layer slot l of every group uses the same bytes, and a "
        "block id belongs to one group at a time");
  }
  if (without_sharing) {
    const KVCacheConfig& plain = without_sharing->kv_cache_config;
    line(
        "KV sharing: {} layers read an earlier layer's cache; without sharing the budget holds {} "
        "tokens per layer, with sharing {} (x{:.2f})",
        plan.shared_layers.size(), tokens_capacity(plain), tokens_capacity(kv),
        static_cast<double>(tokens_capacity(kv)) /
            static_cast<double>(std::max<std::int64_t>(1, tokens_capacity(plain))));
  }
  line("bindings:");
  const nlohmann::json bindings = bindings_json(plan);
  for (const nlohmann::json& b : bindings) {
    std::string shares = b["shares_with"].is_null()
                             ? std::string()
                             : fmt::format("  (shares {})", b["shares_with"].get<std::string>());
    line("  {:<40} offset {:>14}  {}{}  strides {}{}", b["layer"].get<std::string>(),
         b["offset_bytes"].get<std::int64_t>(), b["dtype"].get<std::string>(), b["shape"].dump(),
         b["strides"].dump(), shares);
  }
  return out;
}

}  // namespace attnrt::cli
