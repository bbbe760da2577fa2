// estimate_hf_weight_bytes: the shared machinery (field reads, TP splits, storage pricing); the
// per-family tensor lists are in hf_weights_families.cc.

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

#include "attnrt/config/config_limits.h"
#include "attnrt/core/checked_math.h"
#include "attnrt/core/nearest_name.h"
#include "attnrt/core/printable.h"
#include "core/fail.h"
#include "hf_class_defaults.h"
#include "hf_weights_parts.h"

namespace attnrt {
namespace detail {

WeightFields::WeightFields(const nlohmann::json& object, std::string model_type,
                           std::string field_prefix)
    : object_(object), model_type_(std::move(model_type)), field_prefix_(std::move(field_prefix)) {}

void WeightFields::fail_field(std::string_view field, std::string_view problem) const {
  fail("{}: {}{}: {}", printable(model_type_), field_prefix_, field, problem);
}

const nlohmann::json* WeightFields::find(std::string_view field) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(field);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::uint64_t WeightFields::integer(std::string_view field, const nlohmann::json& value) const {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (!value.is_number_integer()) fail_field(field, "expected an integer");
  const std::int64_t number = value.get<std::int64_t>();
  if (number < 0) fail_field(field, fmt::format("{} is negative", number));
  return static_cast<std::uint64_t>(number);
}

std::uint64_t WeightFields::dim(std::string_view field) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) fail_field(field, "missing (a required field of this model type)");
  const std::uint64_t number = integer(field, *value);
  if (number == 0) fail_field(field, "must be at least 1");
  return number;
}

// Layers are walked one by one where they differ, so their number is bounded.
std::uint64_t WeightFields::layers(std::string_view field) const {
  const std::uint64_t number = dim(field);
  if (number > limits::kMaxLayers) {
    fail_field(field,
               fmt::format("{} is more than the {} layers supported", number, limits::kMaxLayers));
  }
  return number;
}

bool WeightFields::flag_or(std::string_view field, bool fallback) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) fail_field(field, "expected true or false");
  return value->get<bool>();
}

std::string WeightFields::text_or(std::string_view field, std::string_view fallback) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return std::string(fallback);
  if (!value->is_string()) fail_field(field, "expected a string");
  return value->get<std::string>();
}

std::vector<std::uint64_t> WeightFields::counts(std::string_view field) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return {};
  if (!value->is_array()) fail_field(field, "expected an array of integers");
  std::vector<std::uint64_t> numbers;
  for (const nlohmann::json& item : *value) numbers.push_back(integer(field, item));
  return numbers;
}

std::vector<std::string> WeightFields::texts(std::string_view field) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return {};
  if (!value->is_array()) fail_field(field, "expected an array of strings");
  std::vector<std::string> strings;
  for (const nlohmann::json& item : *value) {
    if (!item.is_string()) fail_field(field, "expected an array of strings");
    strings.push_back(item.get<std::string>());
  }
  return strings;
}

void HfWeights::add(std::string_view component, std::uint64_t count, std::uint64_t rows,
                    std::uint64_t cols, std::uint64_t rank_rows, std::uint64_t rank_cols,
                    HfStore store) {
  if (count == 0 || rows == 0 || cols == 0) return;
  tensors_.push_back({component, count, rows, cols, rank_rows, rank_cols, store});
}

std::uint64_t HfWeights::product(std::uint64_t heads, std::uint64_t head_dim) {
  return checked_mul(heads, head_dim, "heads x head_dim");
}

HfDims read_dims(const WeightFields& f) {
  HfDims d;
  d.hidden = f.dim("hidden_size");
  d.layers = f.layers("num_hidden_layers");
  d.heads = f.dim("num_attention_heads");
  d.kv_heads = f.dim_or("num_key_value_heads", d.heads);
  if (!f.has("head_dim") && d.hidden < d.heads) {
    f.fail_field("head_dim", "missing, and hidden_size / num_attention_heads is 0");
  }
  d.head_dim = f.dim_or("head_dim", d.hidden / d.heads);
  d.vocab = f.dim("vocab_size");
  return d;
}

void add_attention(HfWeights& w, std::uint64_t count, std::uint64_t hidden, const HfAttention& a) {
  const std::string_view name = "attention";
  const std::uint64_t kv = count * (a.v_proj ? 2 : 1);  // count <= limits::kMaxLayers
  w.q_heads(name, count, a.heads, a.head_dim, hidden);
  w.kv_heads(name, kv, a.kv_heads, a.head_dim, hidden);
  w.o_heads(name, count, a.heads, a.head_dim, hidden);
  if (a.qkv_bias) {
    w.q_heads(name, count, a.heads, a.head_dim, 1, HfStore::kPlain);
    w.kv_heads(name, kv, a.kv_heads, a.head_dim, 1, HfStore::kPlain);
  }
  if (a.o_bias) w.replicated(name, count, hidden, 1);  // row-parallel bias: whole
  if (a.qk_norm) w.norm(count * 2, a.head_dim);
}

void add_gated_mlp(HfWeights& w, std::string_view component, std::uint64_t count,
                   std::uint64_t hidden, std::uint64_t inter, HfStore store, bool bias) {
  const std::uint64_t pairs = checked_mul(count, 2, component);
  w.column(component, pairs, inter, hidden, store);
  w.row(component, count, hidden, inter, store);
  if (!bias) return;
  w.column(component, pairs, inter, 1);
  w.replicated(component, count, hidden, 1);
}

}  // namespace detail

namespace {

using detail::HfStore;
using detail::HfTensor;
using detail::WeightFields;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

enum class Method { kNone, kFp8, kMxfp4, kPacked };

// How quantized linears and everything else are stored.
struct Storage {
  std::uint64_t dtype_bytes = 2;
  std::string dtype;
  Method method = Method::kNone;
  std::uint64_t block_rows = 0;  // fp8: 0 means one scale per output channel
  std::uint64_t block_cols = 0;
  std::uint64_t bits = 0;        // awq / gptq
  std::uint64_t group_size = 0;  // 0: one group spans the whole input
  std::string name;
};

// torch_dtype or dtype, the language config's first.
void read_dtype(const nlohmann::json& config, const nlohmann::json& text, const std::string& type,
                Storage& storage) {
  std::string name;
  for (const nlohmann::json* object : {&text, &config}) {
    const WeightFields fields(*object, type);
    for (const char* field : {"torch_dtype", "dtype"}) {
      if (name.empty() && fields.has(field)) name = fields.text_or(field, "");
    }
  }
  if (name.empty()) fail("{}: torch_dtype (or dtype): missing; the weight dtype", printable(type));
  if (name == "bfloat16" || name == "float16") {
    storage.dtype_bytes = 2;
  } else if (name == "float32") {
    storage.dtype_bytes = 4;
  } else {
    fail("{}: torch_dtype '{}' is not a supported weight dtype (bfloat16, float16, float32)",
         printable(type), printable(name));
  }
  storage.dtype = name;
}

void read_fp8(const WeightFields& quant, Storage& storage) {
  const std::vector<std::uint64_t> block = quant.counts("weight_block_size");
  if (block.empty()) {
    storage.name = fmt::format("fp8 e4m3 (per-channel scales), {} rest", storage.dtype);
    return;
  }
  if (block.size() != 2 || block[0] == 0 || block[1] == 0) {
    quant.fail_field("weight_block_size", "expected two positive integers, like [128, 128]");
  }
  storage.block_rows = block[0];
  storage.block_cols = block[1];
  storage.name =
      fmt::format("fp8 e4m3 (block scales {}x{}), {} rest", block[0], block[1], storage.dtype);
}

// AWQ / GPTQ: `bits`-wide packed weights, f16 scales and packed zeros per group of inputs.
void read_packed(const nlohmann::json& json, const WeightFields& quant, const std::string& method,
                 Storage& storage) {
  storage.bits = quant.dim("bits");
  if (storage.bits > 8) quant.fail_field("bits", fmt::format("{} is more than 8", storage.bits));
  // group_size -1: one group spanning the whole input (common in GPTQ configs).
  const auto group = json.find("group_size");
  const bool whole = group != json.end() && group->is_number_integer() && *group == -1;
  storage.group_size = whole ? 0 : quant.dim("group_size");
  const std::string groups =
      whole ? std::string("one group per row") : fmt::format("groups of {}", storage.group_size);
  storage.name = fmt::format("{} {}-bit ({}, f16 scales), {} rest", method, storage.bits, groups,
                             storage.dtype);
}

// quantization_config, at the top level or (rarely) in the language config.
const nlohmann::json* find_quantization(const nlohmann::json& config, const nlohmann::json& text) {
  for (const nlohmann::json* object : {&config, &text}) {
    const auto it = object->find("quantization_config");
    if (it != object->end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

Storage read_storage(const nlohmann::json& config, const nlohmann::json& text,
                     const std::string& type) {
  Storage storage;
  read_dtype(config, text, type, storage);
  storage.name = storage.dtype;
  const nlohmann::json* quant_json = find_quantization(config, text);
  if (quant_json == nullptr) return storage;
  if (!quant_json->is_object())
    fail("{}: quantization_config: expected an object", printable(type));
  const WeightFields quant(*quant_json, type, "quantization_config.");
  if (!quant.has("quant_method")) quant.fail_field("quant_method", "missing");
  const std::string method = quant.text_or("quant_method", "");
  if (method == "fp8") {
    storage.method = Method::kFp8;
    read_fp8(quant, storage);
  } else if (method == "mxfp4") {
    storage.method = Method::kMxfp4;
    storage.name = fmt::format("mxfp4 experts, {} rest", storage.dtype);
  } else if (method == "awq" || method == "gptq") {
    storage.method = Method::kPacked;
    read_packed(*quant_json, quant, method, storage);
  } else {
    fail(
        "{}: quantization_config.quant_method '{}' is not supported (supported: fp8, mxfp4, awq, "
        "gptq)",
        printable(type), printable(method));
  }
  return storage;
}

// One rank's bytes of one tensor of `t`.
std::uint64_t shard_bytes(const HfTensor& t, const Storage& s) {
  const std::uint64_t elements = checked_mul(t.rank_rows, t.rank_cols, "weight elements");
  const bool quantized = t.store != HfStore::kPlain && s.method != Method::kNone &&
                         (s.method != Method::kMxfp4 || t.store == HfStore::kExpert);
  if (!quantized) return checked_mul(elements, s.dtype_bytes, "weight bytes");
  switch (s.method) {
    case Method::kFp8: {
      const std::uint64_t scales =
          s.block_rows == 0 ? t.rank_rows
                            : checked_mul(ceil_div(t.rank_rows, s.block_rows),
                                          ceil_div(t.rank_cols, s.block_cols), "fp8 scales");
      return checked_add(elements, checked_mul(scales, 4, "fp8 scale bytes"), "fp8 bytes");
    }
    case Method::kMxfp4: {
      // Two 4-bit values a byte, one e8m0 scale byte per 32 inputs.
      const std::uint64_t scales = checked_mul(t.rank_rows, ceil_div(t.rank_cols, 32), "scales");
      return checked_add(ceil_div(elements, 2), scales, "mxfp4 bytes");
    }
    case Method::kPacked: {
      const std::uint64_t groups = s.group_size == 0 ? 1 : ceil_div(t.rank_cols, s.group_size);
      const std::uint64_t per_group = checked_mul(groups, t.rank_rows, "quantization groups");
      const std::uint64_t weights = ceil_div(checked_mul(elements, s.bits, "packed bits"), 8);
      const std::uint64_t zeros = ceil_div(checked_mul(per_group, s.bits, "packed zeros"), 8);
      return checked_add(checked_add(weights, zeros, "packed bytes"),
                         checked_mul(per_group, 2, "f16 scale bytes"), "packed bytes");
    }
    case Method::kNone:
      break;
  }
  return checked_mul(elements, s.dtype_bytes, "weight bytes");
}

// In transformers the top-level value of a multimodal wrapper governs, then the language
// config's, then the family's class default.
bool ties_embeddings(const nlohmann::json& config, const nlohmann::json& text,
                     const detail::HfFamily& family, const std::string& type) {
  const char* field = "tie_word_embeddings";
  if (&config != &text && WeightFields(config, type).has(field)) {
    return WeightFields(config, type).flag_or(field, false);
  }
  return WeightFields(text, type).flag_or(field, family.ties_by_default);
}

std::vector<std::string> not_counted(const nlohmann::json& config, const WeightFields& text) {
  std::vector<std::string> parts;
  const WeightFields top(config, text.model_type());
  if (top.has("vision_config")) parts.emplace_back("vision tower (vision_config)");
  if (top.has("audio_config")) parts.emplace_back("audio tower (audio_config)");
  const std::uint64_t mtp = text.count_or("num_nextn_predict_layers", 0);
  if (mtp > 0) parts.push_back(fmt::format("MTP layers (num_nextn_predict_layers {})", mtp));
  return parts;
}

const detail::HfFamily& find_family(const std::string& type) {
  std::vector<std::string_view> names;
  for (const detail::HfFamily& family : detail::hf_families()) {
    if (family.model_type == type) return family;
    names.push_back(family.model_type);
  }
  const std::string_view near = nearest_name(type, names);
  fail("model_type '{}' is not supported by the weight estimate{} (supported: {})", printable(type),
       near.empty() ? "" : fmt::format("; did you mean '{}'?", near), fmt::join(names, ", "));
}

const nlohmann::json& language_config(const nlohmann::json& config) {
  if (!config.is_object()) fail("config.json: expected a JSON object");
  const auto it = config.find("text_config");
  if (it == config.end() || it->is_null()) return config;
  if (!it->is_object()) fail("text_config: expected an object");
  return *it;
}

// The language model's type: its own, else the one its wrapper holds (as the importer reads it).
std::string model_type_of(const nlohmann::json& config, const nlohmann::json& text) {
  const char* where = &config == &text ? "model_type" : "text_config.model_type";
  const auto it = text.find("model_type");
  if (it != text.end() && !it->is_null()) {
    if (!it->is_string()) fail("{}: expected a string", where);
    return it->get<std::string>();
  }
  const auto top = config.find("model_type");
  if (&config != &text && top != config.end() && top->is_string()) {
    return detail::wrapped_text_model_type(top->get<std::string>());
  }
  fail("{}: missing; it names the model family", where);
}

void add_priced(WeightBreakdown& out, const HfTensor& t, const Storage& storage) {
  const std::string what = fmt::format("{} parameters", t.component);
  const std::uint64_t parameters = checked_product(what, t.count, t.rows, t.cols);
  const std::uint64_t bytes = checked_mul(t.count, shard_bytes(t, storage), what);
  WeightComponent* component = nullptr;
  for (WeightComponent& existing : out.components) {
    if (existing.name == t.component) component = &existing;
  }
  if (component == nullptr)
    component = &out.components.emplace_back(WeightComponent{std::string(t.component)});
  component->parameters = checked_add(component->parameters, parameters, what);
  component->bytes = checked_add(component->bytes, bytes, what);
  out.total_parameters = checked_add(out.total_parameters, parameters, "total parameters");
  out.total_bytes = checked_add(out.total_bytes, bytes, "total weight bytes");
}

}  // namespace

WeightBreakdown estimate_hf_weight_bytes(const nlohmann::json& config, int tensor_parallel_size) {
  if (tensor_parallel_size < 1 || tensor_parallel_size > limits::kMaxTensorParallel) {
    fail("tensor_parallel_size: {} is outside 1..{}", tensor_parallel_size,
         limits::kMaxTensorParallel);
  }
  const nlohmann::json& text = language_config(config);
  std::string type = model_type_of(config, text);
  nlohmann::json filled = text;  // with the fields transformers' class fills in
  if (&text == &config && detail::wrapped_text_model_type(type) != type) {
    filled = detail::default_text_config(type);  // a wrapper without a text_config
    type = detail::wrapped_text_model_type(type);
  }
  const detail::HfFamily& family = find_family(type);
  (void)detail::apply_class_defaults(filled, type);
  const WeightFields fields(filled, type);
  const Storage storage = read_storage(config, text, type);
  detail::HfWeights weights(static_cast<std::uint64_t>(tensor_parallel_size));
  const detail::HfHeadShape head = family.add(fields, weights);
  if (!ties_embeddings(config, text, family, type)) {
    weights.column("lm_head", 1, head.vocab, head.hidden);  // vocab-parallel, model dtype
  }
  WeightBreakdown out;
  for (const HfTensor& tensor : weights.tensors()) add_priced(out, tensor, storage);
  out.storage = storage.name;
  out.not_counted = not_counted(config, fields);
  return out;
}

}  // namespace attnrt
