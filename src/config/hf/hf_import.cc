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
#include "hf_fields.h"
#include "hf_layers.h"

namespace attnrt {
namespace {

using detail::HfFields;
using nlohmann::json;

// The text model type a wrapper holds when its text_config omits model_type.
std::string text_model_type_of(std::string_view wrapper) {
  static const std::map<std::string_view, std::string_view> kTextTypes = {
      {"gemma3", "gemma3_text"}, {"gemma3n", "gemma3n_text"}, {"gemma4", "gemma4_text"},
      {"llama4", "llama4_text"}, {"qwen3_5", "qwen3_5_text"}, {"mistral3", "mistral"}};
  const auto it = kTextTypes.find(wrapper);
  return std::string(it == kTextTypes.end() ? wrapper : it->second);
}

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

// vLLM's _get_and_verify_max_len: the smallest of the length keys, scaled by rope_scaling's
// factor unless the RoPE type extends the context itself (su, longrope, llama3).
std::pair<int, std::string> derived_max_model_len(const HfFields& fields,
                                                  std::vector<std::string>& notes) {
  double derived = INFINITY;
  std::string source;
  for (const std::string_view key :
       {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
        "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len"}) {
    const std::optional<double> value = fields.get_number(key);
    if (value && *value < derived) {
      derived = *value;
      source = fields.path(key);
    }
  }
  if (!std::isfinite(derived)) {
    notes.push_back("no max length field: vLLM assumes 2048");
    derived = 2048;
    source = "vLLM's default 2048";
  }
  if (const json* rope = fields.get("rope_scaling"); rope != nullptr && rope->is_object()) {
    const HfFields scaling(*rope, fields.model_type(), fields.path("rope_scaling."));
    const std::string type =
        scaling.get_string("rope_type").value_or(scaling.get_string("type").value_or("default"));
    if (type != "su" && type != "longrope" && type != "llama3") {
      if (type == "yarn") {
        derived = scaling.require_int("original_max_position_embeddings");
        source = scaling.path("original_max_position_embeddings");
      }
      derived *= scaling.get_number("factor").value_or(1.0);
      source += fmt::format(" x rope_scaling.factor ({})", type);
    }
  }
  if (!(derived >= 1)) fields.fail_at("max_position_embeddings", "must be at least 1");
  if (derived > limits::kMaxModelLen) {
    notes.push_back(fmt::format("derived max length {} capped at attnrt's limit {}", derived,
                                limits::kMaxModelLen));
    derived = limits::kMaxModelLen;
  }
  return {static_cast<int>(derived), source};
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
  const bool wrapped = text != nullptr;
  if (wrapped && !text->is_object()) root.fail_at("text_config", "expected an object");
  const json& language = wrapped ? *text : value;
  const HfFields probe(language, *top_type, wrapped ? "text_config." : "");
  result.model_type = probe.get_string("model_type").value_or(text_model_type_of(*top_type));
  refuse_unmapped(result.model_type);
  const HfFields fields(language, result.model_type, wrapped ? "text_config." : "");

  detail::HfLayerSet set =
      detail::map_hf_layers(fields, wrapped ? "language_model.model" : "model");
  result.notes = set.notes;
  std::tie(result.derived_max_model_len, result.max_len_source) =
      derived_max_model_len(fields, result.notes);
  result.model_dtype = model_dtype_of(fields, root, result.notes);
  // vLLM's "auto" state dtypes: the model dtype, unless the family fixes the SSM state's.
  for (detail::HfLayer& layer : set.layers) {
    if (layer.state)
      layer.state->dtypes = {result.model_dtype, set.ssm_dtype.value_or(result.model_dtype)};
  }

  EngineConfig& config = result.config;
  config.model.name = result.architecture.empty() ? result.model_type : result.architecture;
  config.model.max_model_len = result.derived_max_model_len;
  config.model.hidden_size = fields.get_int("hidden_size").value_or(fields.int_or("d_model", 0));
  config.model.vocab_size = std::clamp(fields.int_or("vocab_size", 0), 0, limits::kMaxVocabSize);
  if (set.max_encoder_len > 0) config.model.max_encoder_len = set.max_encoder_len;
  config.model.layers = to_layer_configs(set);
  config.cache.dtype = result.model_dtype;
  // vLLM's defaults for an online server on one large GPU.
  config.scheduler.max_num_seqs = 256;
  config.scheduler.max_num_batched_tokens = 8192;
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
