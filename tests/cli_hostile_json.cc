// Builders of hostile configs: the mutation bases, raw JSON tokens, and the paths a culprit has
// in the loader's words.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

// Every section and key of docs/config.md, every layer type, a nested repeat, a sharing layer,
// a draft layer and two backend profiles. `attnrt plan` accepts it (the Baseline test checks).
constexpr const char* kKitchenSink = R"({
  "model": {"name": "kitchen-sink", "max_model_len": 256, "hidden_size": 64, "vocab_size": 128,
    "max_encoder_len": 64,
    "layers": [
      {"name": "first", "type": "full", "num_heads": 8, "num_kv_heads": 1, "head_size": 16,
       "head_size_v": 16, "backend": "MY_PROFILE"},
      {"repeat": 2, "layers": [
        {"name": "block.{r}.sliding", "type": "sliding_window", "num_heads": 8, "num_kv_heads": 1,
         "head_size": 16, "sliding_window": 32},
        {"name": "block.{r}.chunked", "type": "chunked_local", "num_heads": 8, "num_kv_heads": 1,
         "head_size": 16, "attention_chunk_size": 64},
        {"repeat": 1, "layers": [
          {"name": "block.{i}.cross", "type": "cross", "num_heads": 8, "num_kv_heads": 1,
           "head_size": 16}]}]},
      {"name": "latent", "type": "mla", "num_heads": 8, "num_kv_heads": 1, "head_size": 32,
       "head_size_v": 16},
      {"name": "encoder", "type": "encoder_only", "backend": "ENC_PROFILE", "num_heads": 8,
       "num_kv_heads": 1, "head_size": 16},
      {"name": "sharer", "type": "full", "num_heads": 8, "num_kv_heads": 1, "head_size": 16,
       "kv_sharing_target": "first"},
      {"name": "draft.0", "type": "full", "num_heads": 8, "num_kv_heads": 1, "head_size": 16,
       "draft": true}]},
  "cache": {"block_size": 16, "dtype": "auto", "layout": "LBNHC", "memory": "64MiB",
            "kv_sharing_fast_prefill": true},
  "compilation": {"cudagraph_mode": "FULL_AND_PIECEWISE", "capture_sizes": [1, 2, 4, 8],
                  "attention_split_piecewise": true},
  "scheduler": {"max_num_seqs": 8, "max_num_batched_tokens": 256},
  "speculative": {"num_speculative_tokens": 1, "enable_adaptive_verification": false},
  "parallel": {"num_ubatches": 1, "tensor_parallel_size": 1},
  "lora": {"capture_cases": [0, 1]},
  "backends": [
    {"name": "MY_PROFILE", "kernel": "CPU_REFERENCE", "cudagraph_support": "UNIFORM_BATCH",
     "varlen_cudagraph_max_query_len": 4, "supports_device_cpu_query_lens_mismatch": true,
     "supports_batch_invariance": false, "kernel_block_sizes": [16, {"multiple_of": 8}],
     "kv_cache_layouts": ["LBNHC", "LBHNC"], "spec_kinds": ["full"]},
    {"name": "ENC_PROFILE", "spec_kinds": ["encoder_only"]}]
})";

std::filesystem::path examples_dir() {
  return std::filesystem::path(ATTNRT_SOURCE_DIR) / "examples";
}

bool is_repeat_block(const json& entry) {
  return entry.is_object() && (entry.contains("repeat") || entry.contains("layers"));
}

// Walks `layers` as the loader expands it and records, for each layer object's JSON pointer, the
// expanded index of its first copy. Stops at `limit` layers (hostile counts stay cheap).
void first_indices(const json& layers, const json::json_pointer& at, std::size_t& next,
                   std::map<std::string, std::size_t>& first, std::size_t limit) {
  if (!layers.is_array()) return;
  for (std::size_t i = 0; i < layers.size() && next < limit; ++i) {
    const json& entry = layers[i];
    const json::json_pointer here = at / i;
    if (!is_repeat_block(entry)) {
      first.emplace(here.to_string(), next++);
      continue;
    }
    const json count = entry.value("repeat", json(1));
    const int repeats = count.is_number_integer() ? count.get<int>() : 1;
    for (int r = 0; r < repeats && next < limit; ++r) {
      first_indices(entry.value("layers", json()), here / "layers", next, first, limit);
    }
  }
}

}  // namespace

void PrintTo(const HostileCase& c, std::ostream* os) {
  *os << c.name;
}

std::string example_text(const std::string& name) {
  std::ifstream file(examples_dir() / (name + ".json"), std::ios::binary);
  if (!file) throw std::runtime_error("cannot read example " + name);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> example_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(examples_dir())) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

json kitchen_sink() {
  return json::parse(kKitchenSink);
}

json small_config() {
  return json::parse(R"({"model": {"name": "small", "max_model_len": 256, "layers": [
      {"num_heads": 8, "num_kv_heads": 2, "head_size": 32}]}, "cache": {"memory": "4MiB"}})");
}

HostileCase plan_case(std::string name, std::string text, std::vector<std::string> culprits) {
  return {std::move(name),
          {"plan", "{CONFIG}"},
          ConfigInput::text,
          std::move(text),
          std::move(culprits)};
}

std::string raw_marker(std::size_t k) {
  return "@@RAW" + std::to_string(k) + "@@";
}

std::string dump_with_raw(const json& value, const std::vector<std::string>& raw) {
  std::string text = value.dump();
  for (std::size_t k = 0; k < raw.size(); ++k) {
    const std::string quoted = fmt::format("\"{}\"", raw_marker(k));
    for (std::size_t pos = text.find(quoted); pos != std::string::npos;
         pos = text.find(quoted, pos + raw[k].size())) {
      text.replace(pos, quoted.size(), raw[k]);
    }
  }
  return text;
}

std::string loader_path(const json& document, const json::json_pointer& pointer) {
  std::string path;
  const json* at = &document;
  const std::string text = pointer.to_string();  // "/a/0/b"; tokens hold no '/' or '~' here
  for (std::size_t pos = 1; pos <= text.size();) {
    const std::size_t slash = std::min(text.find('/', pos), text.size());
    const std::string token = text.substr(pos, slash - pos);
    if (at != nullptr && at->is_array()) {
      path += "[" + token + "]";
      const std::size_t index = std::stoul(token);
      at = index < at->size() ? &(*at)[index] : nullptr;
    } else {
      path += (path.empty() ? "" : ".") + token;
      at = (at != nullptr && at->is_object() && at->contains(token)) ? &(*at)[token] : nullptr;
    }
    pos = slash + 1;
  }
  return path;
}

std::string expanded_path(const json& document, const json::json_pointer& pointer) {
  const json::json_pointer layers("/model/layers");
  const std::string text = pointer.to_string();
  if (text.rfind(layers.to_string() + "/", 0) != 0 || !document.contains(layers)) return "";
  std::map<std::string, std::size_t> first;
  std::size_t next = 0;
  first_indices(document.at(layers), layers, next, first, 100000);
  // The longest recorded layer pointer that prefixes `pointer` is the layer holding the leaf.
  for (json::json_pointer at = pointer; !at.empty(); at = at.parent_pointer()) {
    const auto found = first.find(at.to_string());
    if (found == first.end()) continue;
    const std::string rest =
        loader_path(document.at(at), json::json_pointer(text.substr(at.to_string().size())));
    return "model.layers[" + std::to_string(found->second) + "]" + (rest.empty() ? "" : ".") + rest;
  }
  return "";
}

std::string culprit_path(const json& document, const json::json_pointer& pointer) {
  const std::string path = loader_path(document, pointer);
  const std::string expanded = expanded_path(document, pointer);
  return expanded.empty() || expanded == path ? path : path + "|" + expanded;
}

HostileCase replaced_case(const std::string& base_name, const json& document,
                          const json::json_pointer& pointer, const std::string& label,
                          const std::string& raw) {
  json changed = document;
  changed[pointer] = raw_marker(0);
  const std::string name =
      base_name + "_" + identifier(loader_path(document, pointer)) + "_" + label;
  return plan_case(name, dump_with_raw(changed, {raw}), {culprit_path(document, pointer)});
}

std::string identifier(const std::string& text) {
  std::string id;
  for (const char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (keep) {
      id += c;
    } else if (!id.empty() && id.back() != '_') {
      id += '_';
    }
  }
  while (!id.empty() && id.back() == '_') id.pop_back();
  return id;
}

}  // namespace attnrt::testing
