#include "hf_layer_rules.h"

#include <fmt/format.h>

#include <array>

#include "attnrt/core/printable.h"

namespace attnrt::detail {
namespace {

// Layer types of state layers (Mamba, Gated DeltaNet, short convolutions): the hybrid issue.
constexpr std::array<std::string_view, 5> kStateLayerTypes = {"mamba", "linear_attention", "conv",
                                                              "mamba2", "hybrid"};

std::optional<HfLayerKind> layer_kind_of(std::string_view name) {
  if (name == "full_attention" || name == "attention") return HfLayerKind::full;
  if (name == "sliding_attention") return HfLayerKind::sliding;
  if (name == "chunked_attention") return HfLayerKind::chunked;
  return std::nullopt;
}

}  // namespace

int derived_head_size(const HfFields& fields) {
  const int hidden = fields.require_int("hidden_size");
  const int heads = fields.require_int("num_attention_heads");
  if (heads <= 0) fields.fail_at("num_attention_heads", "must be positive (got {})", heads);
  if (hidden <= 0 || hidden % heads != 0) {
    fields.fail_at("hidden_size",
                   "{} is not a positive multiple of num_attention_heads {}, so the head size "
                   "cannot be derived; give head_dim",
                   hidden, heads);
  }
  return hidden / heads;
}

HfHeads read_hf_heads(const HfFields& fields, const HfFamilyDefaults& defaults) {
  HfHeads heads;
  heads.num_heads = fields.require_int("num_attention_heads");
  if (heads.num_heads <= 0) {
    fields.fail_at("num_attention_heads", "must be positive (got {})", heads.num_heads);
  }
  std::string kv_source;
  for (const std::string_view key :
       {"n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num"}) {
    if (const std::optional<int> kv = fields.get_int(key)) {
      heads.num_kv_heads = *kv;
      kv_source = key;
      break;
    }
  }
  if (kv_source.empty()) {
    heads.num_kv_heads = heads.num_heads;
    kv_source = "num_key_value_heads absent: num_attention_heads";
  }
  std::string head_source;
  if (defaults.ignores_head_dim) {
    heads.head_size = derived_head_size(fields);
    head_source = "hidden_size / num_attention_heads (the model ignores head_dim)";
  } else if (const std::optional<int> head_dim = fields.get_int("head_dim")) {
    heads.head_size = *head_dim;
    head_source = "head_dim";
  } else {
    heads.head_size = derived_head_size(fields);
    head_source = "hidden_size / num_attention_heads";
  }
  heads.decided_by = fmt::format("num_attention_heads, {}, {}", kv_source, head_source);
  return heads;
}

std::optional<std::vector<std::string>> read_layer_type_names(const HfFields& fields,
                                                              int num_layers) {
  if (!fields.has("layer_types")) return std::nullopt;
  std::vector<std::string> names = fields.string_list("layer_types");
  if (static_cast<int>(names.size()) != num_layers) {
    fields.fail_at("layer_types", "{} entries, but num_hidden_layers is {}", names.size(),
                   num_layers);
  }
  return names;
}

std::optional<HfLayerKinds> read_layer_types(const HfFields& fields, int num_layers) {
  const std::optional<std::vector<std::string>> listed = read_layer_type_names(fields, num_layers);
  if (!listed) return std::nullopt;
  const std::vector<std::string>& names = *listed;
  HfLayerKinds kinds{{}, "layer_types"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (const std::optional<HfLayerKind> kind = layer_kind_of(names[i])) {
      kinds.kinds.push_back(*kind);
      continue;
    }
    for (const std::string_view state : kStateLayerTypes) {
      if (names[i] == state) {
        fields.fail_at("layer_types",
                       "entry {} is \"{}\", a state layer, but {} is not a hybrid family the "
                       "importer maps (Jamba, Granite 4, Nemotron-H, Qwen3-Next, Qwen3.5)",
                       i, state, fields.model_type());
      }
    }
    fields.fail_at("layer_types",
                   "entry {} is \"{}\"; expected full_attention, sliding_attention or "
                   "chunked_attention",
                   i, printable(names[i], 60));
  }
  return kinds;
}

HfLayerKinds sliding_except_every(int num_layers, int period, std::string decided_by) {
  HfLayerKinds kinds{{}, std::move(decided_by)};
  for (int i = 0; i < num_layers; ++i) {
    kinds.kinds.push_back((i + 1) % period == 0 ? HfLayerKind::full : HfLayerKind::sliding);
  }
  return kinds;
}

int read_window(const HfFields& fields) {
  const int window = fields.int_or("sliding_window", 0);
  if (window < 0) fields.fail_at("sliding_window", "must not be negative (got {})", window);
  return window;
}

std::vector<int> kv_sharing_targets(const HfFields& fields, const std::vector<HfLayerKind>& kinds,
                                    int num_shared) {
  const int num_layers = static_cast<int>(kinds.size());
  std::vector<int> targets(kinds.size(), -1);
  if (num_shared == 0) return targets;
  if (num_shared < 0 || num_shared >= num_layers) {
    fields.fail_at("num_kv_shared_layers", "{} is outside [0, num_hidden_layers {})", num_shared,
                   num_layers);
  }
  const int first_shared = num_layers - num_shared;
  for (int i = first_shared; i < num_layers; ++i) {
    for (int j = first_shared - 1; j >= 0; --j) {
      if (kinds[j] == kinds[i]) {
        targets[i] = j;
        break;
      }
    }
    if (targets[i] < 0) {
      fields.fail_at("num_kv_shared_layers",
                     "layer {} shares KV, but no layer of its kind comes before the {} shared "
                     "layers",
                     i, num_shared);
    }
  }
  return targets;
}

}  // namespace attnrt::detail
