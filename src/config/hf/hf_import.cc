// import_hf_model: the language config (text_config of a multimodal wrapper), its family's
// layers, vLLM's max-length rule, the model dtype, then the engine arguments on top.

#include "attnrt/config/hf_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "attnrt/config/config_limits.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/core/nearest_name.h"
#include "attnrt/core/printable.h"
#include "config/json_text.h"
#include "core/fail.h"
#include "hf_class_defaults.h"
#include "hf_fields.h"
#include "hf_layers.h"

namespace attnrt {
namespace {

using detail::HfFields;
using nlohmann::json;

void refuse_hybrid(std::string_view model_type) {
  if (detail::is_hybrid_hf_model_type(model_type)) {
    fail(
        "{}: a hybrid model whose state layers the importer does not map; it maps Jamba, "
        "Granite 4, Nemotron-H, Qwen3-Next and Qwen3.5",
        printable(model_type, 80));
  }
}

void refuse_unmapped(std::string_view model_type) {
  refuse_hybrid(model_type);
  const std::vector<std::string_view> types = detail::supported_hf_model_types();
  if (std::ranges::find(types, model_type) != types.end()) return;
  const std::string_view near = nearest_name(model_type, types);
  fail("model_type: \"{}\" is not an architecture the importer maps{}; supported: {}",
       printable(model_type, 80), near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
       fmt::format("{}", fmt::join(types, ", ")));
}

// The rope dicts vLLM walks: transformers 5's rope_parameters (one dict, or one per layer type),
// else the legacy rope_scaling. Each with its path, for messages.
std::vector<std::pair<const json*, std::string>> rope_entries(const HfFields& fields) {
  std::vector<std::pair<const json*, std::string>> entries;
  for (const std::string_view key : {"rope_parameters", "rope_scaling"}) {
    const json* rope = fields.get(key);
    if (rope == nullptr || !rope->is_object()) continue;
    const bool nested = !rope->empty() && std::ranges::all_of(rope->items(), [](const auto& item) {
      return item.value().is_object();
    });
    if (!nested) {
      entries.emplace_back(rope, fields.path(key) + ".");
      return entries;
    }
    for (const auto& [layer_type, entry] : rope->items()) {
      entries.emplace_back(&entry, fmt::format("{}.{}.", fields.path(key), layer_type));
    }
    return entries;
  }
  return entries;
}

struct MaxLen {
  double derived = INFINITY;
  std::string source;
};

// The smallest of vLLM's length keys; model_max_length (Command-R, Cohere 2) replaces it.
MaxLen length_keys(const HfFields& fields, std::vector<std::string>& notes) {
  MaxLen len;
  for (const std::string_view key :
       {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
        "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len"}) {
    const std::optional<double> value = fields.get_number(key);
    if (value && *value < len.derived) {
      len.derived = *value;
      len.source = fields.path(key);
    }
  }
  if (const std::optional<double> value = fields.get_number("model_max_length");
      value && *value != 0) {
    len = {*value, fields.path("model_max_length")};
  }
  if (!std::isfinite(len.derived)) {
    notes.push_back("no max length field: vLLM assumes 2048");
    len = {2048, "vLLM's default 2048"};
  }
  return len;
}

// vLLM's _get_and_verify_max_len: the length keys, then the RoPE factor of every rope entry
// except su, longrope and llama3 (yarn from its original length), the last entry's factor
// winning. Gemma 3 and 3n ("gemma3" in the text model type) skip the factor: their length is
// already scaled. Returns the derived length (the bound on --max-model-len) and the default
// (the derived one, except LongRoPE's original_max_position_embeddings).
std::pair<MaxLen, int> derived_max_model_len(const HfFields& fields,
                                             std::vector<std::string>& notes) {
  MaxLen len = length_keys(fields, notes);
  bool longrope = false;
  if (fields.model_type().find("gemma3") == std::string::npos) {
    double factor = 1.0;
    std::string factor_source;
    for (const auto& [rope, path] : rope_entries(fields)) {
      const HfFields scaling(*rope, fields.model_type(), path);
      const std::string type =
          scaling.get_string("rope_type").value_or(scaling.get_string("type").value_or("default"));
      longrope = longrope || type == "longrope";
      if (type == "su" || type == "longrope" || type == "llama3") continue;
      if (const std::optional<double> f = scaling.get_number("factor")) {
        factor = *f;
        factor_source = fmt::format(" x {}factor ({})", path, type);
      }
      if (type == "yarn") {
        len = {static_cast<double>(scaling.require_int("original_max_position_embeddings")),
               scaling.path("original_max_position_embeddings")};
      }
    }
    len.derived *= factor;
    len.source += factor_source;
  } else if (!rope_entries(fields).empty()) {
    notes.push_back("rope scaling not applied to the length: vLLM skips it for Gemma 3");
  }
  if (!(len.derived >= 1)) fields.fail_at("max_position_embeddings", "must be at least 1");
  if (len.derived > limits::kMaxModelLen) {
    notes.push_back(fmt::format("derived max length {} capped at attnrt's limit {}", len.derived,
                                limits::kMaxModelLen));
    len.derived = limits::kMaxModelLen;
  }
  int default_len = static_cast<int>(len.derived);
  if (longrope) {  // vLLM serves LongRoPE models at their original length unless asked for more
    default_len =
        std::clamp(fields.int_or("original_max_position_embeddings", default_len), 1, default_len);
  }
  return {len, default_len};
}

// torch_dtype (or transformers 5's dtype), the language config's first. float32 models are
// served in bfloat16 by vLLM's "auto" on devices that have it.
DType model_dtype_of(const HfFields& text, const HfFields& root, std::vector<std::string>& notes) {
  std::optional<std::string> name;
  for (const HfFields* fields : {&text, &root}) {
    for (const std::string_view key : {"torch_dtype", "dtype"}) {
      if (!name) name = fields->get_string(key);
    }
  }
  if (!name) {
    notes.push_back("no torch_dtype: the cache defaults to bfloat16");
    return DType::bf16;
  }
  if (*name == "float16" || *name == "half") return DType::f16;
  if (*name == "bfloat16") return DType::bf16;
  if (*name == "float32" || *name == "float") {
    notes.push_back("torch_dtype float32: served in bfloat16, as vLLM's auto dtype does");
    return DType::bf16;
  }
  root.fail_at("torch_dtype", "\"{}\" is not a model dtype (float16, bfloat16, float32)",
               printable(*name, 40));
}

std::vector<LayerConfig> to_layer_configs(const detail::HfLayerSet& set) {
  std::vector<LayerConfig> layers;
  layers.reserve(set.layers.size());
  for (const detail::HfLayer& hf : set.layers) {
    LayerConfig layer;
    layer.name = hf.name;
    layer.type = hf.type;
    layer.num_heads = hf.num_heads;
    layer.num_kv_heads = hf.num_kv_heads;
    layer.head_size = hf.head_size;
    layer.head_size_v = hf.head_size_v;
    layer.sliding_window = hf.sliding_window;
    layer.attention_chunk_size = hf.attention_chunk_size;
    layer.state = hf.state;
    if (hf.shares_with >= 0) layer.kv_sharing_target = set.layers[hf.shares_with].name;
    layers.push_back(std::move(layer));
  }
  return layers;
}

// Equal layers collapse into one kind, in order of first appearance.
std::vector<ImportedLayerKind> layer_kinds(const detail::HfLayerSet& set) {
  std::vector<ImportedLayerKind> kinds;
  for (const detail::HfLayer& hf : set.layers) {
    ImportedLayerKind kind{hf.type,
                           0,
                           hf.num_heads,
                           hf.num_kv_heads,
                           hf.head_size,
                           hf.head_size_v,
                           hf.sliding_window,
                           hf.attention_chunk_size,
                           0,
                           hf.v_copies_k,
                           hf.state,
                           hf.decided_by};
    auto it = std::ranges::find_if(kinds, [&](const ImportedLayerKind& k) {
      ImportedLayerKind same = k;
      same.count = same.sharing = 0;
      return same == kind;
    });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), kind);
    ++it->count;
    if (hf.shares_with >= 0) ++it->sharing;
  }
  return kinds;
}

}  // namespace

bool is_hf_config(const json& value) {
  return value.is_object() && !value.contains("model") &&
         (value.contains("architectures") || value.contains("model_type"));
}

json parse_hf_config_text(std::string_view text) {
  return detail::parse_python_json_text(text);
}

HfImport import_hf_model(const json& value, const ImportOptions& options) {
  if (!value.is_object()) fail("config.json: expected a JSON object at the top level");
  const HfFields root(value, "config.json", "");
  const std::optional<std::string> top_type = root.get_string("model_type");
  if (!top_type) root.fail_at("model_type", "missing; the importer maps by model_type");
  HfImport result;
  const std::vector<std::string> architectures = root.string_list("architectures");
  if (!architectures.empty()) result.architecture = printable(architectures.front(), 120);
  refuse_hybrid(*top_type);  // a hybrid wrapper is named before its text config is read
  const json* text = root.get("text_config");
  if (text != nullptr && !text->is_object()) root.fail_at("text_config", "expected an object");
  // A wrapper without a text_config builds its text class's defaults (transformers).
  const bool wrapped = text != nullptr || detail::wrapped_text_model_type(*top_type) != *top_type;
  json language = text != nullptr ? *text
                  : wrapped       ? detail::default_text_config(*top_type)
                                  : value;
  const HfFields probe(language, *top_type, wrapped ? "text_config." : "");
  result.model_type =
      probe.get_string("model_type").value_or(detail::wrapped_text_model_type(*top_type));
  refuse_unmapped(result.model_type);
  const detail::HfClassDefaults defaults =
      detail::apply_class_defaults(language, result.model_type);
  const HfFields fields(language, result.model_type, wrapped ? "text_config." : "");

  detail::HfLayerSet set =
      detail::map_hf_layers(fields, wrapped ? "language_model.model" : "model");
  result.notes = set.notes;
  if (!defaults.filled.empty()) {
    result.notes.push_back(
        fmt::format("class defaults ({}): {}", defaults.source, fmt::join(defaults.filled, ", ")));
  }
  const auto [max_len, default_len] = derived_max_model_len(fields, result.notes);
  result.derived_max_model_len = static_cast<int>(max_len.derived);
  result.max_len_source = max_len.source;
  result.model_dtype = model_dtype_of(fields, root, result.notes);
  // vLLM's "auto" state dtypes: the model dtype, unless the family fixes the SSM state's.
  for (detail::HfLayer& layer : set.layers) {
    if (layer.state)
      layer.state->dtypes = {result.model_dtype, set.ssm_dtype.value_or(result.model_dtype)};
  }

  EngineConfig& config = result.config;
  config.model.name = result.architecture.empty() ? result.model_type : result.architecture;
  config.model.max_model_len = default_len;
  config.model.hidden_size = fields.get_int("hidden_size").value_or(fields.int_or("d_model", 0));
  config.model.vocab_size = std::clamp(fields.int_or("vocab_size", 0), 0, limits::kMaxVocabSize);
  if (set.max_encoder_len > 0) config.model.max_encoder_len = set.max_encoder_len;
  config.model.layers = to_layer_configs(set);
  config.cache.dtype = result.model_dtype;
  // vLLM's defaults for an online server on one large GPU.
  config.scheduler.max_num_seqs = 256;
  config.scheduler.max_num_batched_tokens = 8192;
  // The newest vLLM turns prefix caching on for generative hybrids (is_prefix_caching_supported),
  // so their states run in "align" mode unless --no-enable-prefix-caching.
  if (std::ranges::any_of(set.layers,
                          [](const detail::HfLayer& layer) { return layer.state.has_value(); })) {
    config.cache.enable_prefix_caching = true;
    result.notes.push_back(
        "prefix caching on (vLLM's default for hybrid models): two state blocks per request "
        "(--mamba-cache-mode align); --no-enable-prefix-caching keeps one");
  }
  for (const detail::HfLayer& layer : set.layers) {
    if (layer.v_copies_k) result.v_copies_k_layers.push_back(layer.name);
  }
  result.kinds = layer_kinds(set);
  try {
    validate_config(config);
  } catch (const Error& error) {
    fail("{}: the imported layers are not valid: {}", result.model_type, error.what());
  }
  const std::optional<int>& user_len = options.args.max_model_len;
  if (user_len && *user_len > result.derived_max_model_len) {
    fail(
        "--max-model-len: User-specified max_model_len ({}) is greater than the derived "
        "max_model_len ({}={} in model's config.json)",
        *user_len, result.max_len_source, result.derived_max_model_len);
  }
  apply_engine_args(config, options.args, result.model_dtype);
  return result;
}

EngineConfig import_hf_config(const json& value, const ImportOptions& options) {
  return import_hf_model(value, options).config;
}

}  // namespace attnrt
