// Generated config cases: every integer field of the kitchen-sink config (and of each example)
// replaced by values of the wrong type and by values just past its documented range.

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

struct Bounds {
  std::int64_t min;
  std::int64_t max;
};

constexpr std::int64_t k2p20 = std::int64_t{1} << 20;
constexpr std::int64_t k2p21 = std::int64_t{1} << 21;
constexpr std::int64_t k2p24 = std::int64_t{1} << 24;
constexpr std::int64_t k2p26 = std::int64_t{1} << 26;

// The documented range of the integer at `key` (its own key, or its list's key for elements).
std::optional<Bounds> bounds_of(const std::string& key, const json& parent) {
  static const std::map<std::string, Bounds> kBounds = {
      {"max_model_len", {1, k2p26}},
      {"max_encoder_len", {1, k2p26}},
      {"hidden_size", {0, k2p20}},
      {"vocab_size", {0, k2p24}},
      {"num_heads", {1, 16384}},
      {"num_kv_heads", {1, 16384}},
      {"head_size", {1, 16384}},
      {"head_size_v", {1, 16384}},
      {"sliding_window", {1, k2p26}},
      {"attention_chunk_size", {1, k2p26}},
      {"repeat", {1, 100000}},
      {"block_size", {1, 65536}},
      {"capture_sizes", {1, k2p21}},
      {"max_capture_size", {1, k2p21}},
      {"max_num_seqs", {1, 65536}},
      {"max_num_batched_tokens", {1, k2p21}},
      {"num_speculative_tokens", {0, 128}},
      {"num_ubatches", {1, 16}},
      {"tensor_parallel_size", {1, 1024}},
      {"capture_cases", {0, 65536}},
      {"varlen_cudagraph_max_query_len", {1, k2p21}},
      {"kernel_block_sizes", {1, 65536}},
      {"multiple_of", {1, 65536}},
  };
  // A state layer's `state` object (it always has a conv_kernel): its own ranges.
  if (parent.is_object() && parent.contains("conv_kernel")) {
    if (key == "conv_kernel") return Bounds{2, 64};
    return Bounds{1, k2p20};
  }
  if (key == "head_size_v" && parent.value("type", "") == "mla") {
    return Bounds{0, parent.value("head_size", 1) - 1};
  }
  const auto found = kBounds.find(key);
  if (found == kBounds.end()) return std::nullopt;
  return found->second;
}

struct Leaf {
  json::json_pointer pointer;
  std::string key;  // the field's key, or its list's key for list elements
  Bounds bounds;
  bool nullable;  // null is a valid value here
  // The first integer of its object or list: it gets every mutation; the others the ones whose
  // handling depends on the field (the reader's type and overflow checks are shared).
  bool first_in_parent = false;
};

bool is_nullable(const std::string& key) {
  return key == "max_capture_size" || key == "varlen_cudagraph_max_query_len";
}

void collect_leaves(const json& value, const json::json_pointer& at, const std::string& key,
                    const json& parent, std::vector<Leaf>& leaves) {
  if (value.is_number_integer()) {
    if (const auto bounds = bounds_of(key, parent)) {
      leaves.push_back({at, key, *bounds, is_nullable(key)});
    }
    return;
  }
  if (value.is_object()) {
    for (const auto& [child, item] : value.items()) {
      collect_leaves(item, at / child, child, value, leaves);
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i)
      collect_leaves(value[i], at / i, key, value, leaves);
  }
}

std::vector<Leaf> integer_leaves(const json& document) {
  std::vector<Leaf> leaves;
  collect_leaves(document, json::json_pointer(), "", document, leaves);
  std::set<std::string> parents;
  for (Leaf& leaf : leaves) {
    leaf.first_in_parent = parents.insert(leaf.pointer.parent_pointer().to_string()).second;
  }
  return leaves;
}

struct Mutation {
  std::string label;  // name suffix
  std::string raw;    // the JSON text put in the field's place
};

std::vector<Mutation> wrong_type_mutations(const Leaf& leaf, const json& value) {
  std::vector<Mutation> list = {{"string", fmt::format("\"{}\"", value.dump())}, {"float", "2.5"}};
  if (!leaf.first_in_parent) return list;
  list.push_back({"bool", "true"});
  list.push_back({"array", fmt::format("[{}]", value.dump())});
  list.push_back({"object", "{\"value\": " + value.dump() + "}"});
  if (!leaf.nullable) list.push_back({"null", "null"});
  return list;
}

std::vector<Mutation> range_mutations(const Leaf& leaf) {
  std::vector<Mutation> list;
  std::set<std::int64_t> seen;
  const auto add = [&](std::string label, std::int64_t v) {
    if (seen.insert(v).second) list.push_back({std::move(label), std::to_string(v)});
  };
  add("negative", -1);
  add("below_min", leaf.bounds.min - 1);
  add("above_max", leaf.bounds.max + 1);
  if (!leaf.first_in_parent) return list;
  add("int_overflow", std::int64_t{1} << 31);
  list.push_back({"two_pow_63", "9223372036854775808"});
  list.push_back({"two_pow_64", "18446744073709551616"});
  list.push_back({"below_int64", "-9223372036854775809"});
  list.push_back({"double_overflow", "1e400"});
  return list;
}

HostileCase mutated(const std::string& base_name, const json& document, const Leaf& leaf,
                    const Mutation& mutation) {
  return replaced_case(base_name, document, leaf.pointer, mutation.label, mutation.raw);
}

using MutationList = std::function<std::vector<Mutation>(const Leaf&, const json&)>;

void add_mutations(std::vector<HostileCase>& cases, const std::string& base_name,
                   const json& document, const MutationList& mutations,
                   const std::function<bool(const Leaf&)>& wanted) {
  for (const Leaf& leaf : integer_leaves(document)) {
    if (!wanted(leaf)) continue;
    for (const Mutation& m : mutations(leaf, document.at(leaf.pointer))) {
      cases.push_back(mutated(base_name, document, leaf, m));
    }
  }
}

// Only the first and last capture size and LoRA case: the others read through the same code.
bool kitchen_leaf(const Leaf& leaf) {
  const std::string p = leaf.pointer.to_string();
  return p != "/compilation/capture_sizes/1" && p != "/compilation/capture_sizes/2" &&
         p != "/lora/capture_cases/0";
}

// max_capture_size must agree with capture_sizes, so it is mutated in a copy without them.
json kitchen_sink_with_max_capture_size() {
  json document = kitchen_sink();
  document["compilation"].erase("capture_sizes");
  document["compilation"]["max_capture_size"] = 8;
  return document;
}

// In the examples, every field but list elements after the first (tiny-yoco's ten capture sizes).
bool example_leaf(const Leaf& leaf) {
  const std::string back = leaf.pointer.empty() ? "" : leaf.pointer.back();
  const bool list_element = !back.empty() && std::isdigit(static_cast<unsigned char>(back[0]));
  return !list_element || back == "0";
}

bool is_max_capture_size(const Leaf& leaf) {
  return leaf.key == "max_capture_size";
}

}  // namespace

std::vector<HostileCase> wrong_type_cases() {
  std::vector<HostileCase> cases;
  const MutationList types = wrong_type_mutations;
  add_mutations(cases, "sink", kitchen_sink(), types, kitchen_leaf);
  add_mutations(cases, "sink", kitchen_sink_with_max_capture_size(), types, is_max_capture_size);
  for (const std::string& example : example_names()) {
    const json document = json::parse(example_text(example));
    const MutationList string_only = [](const Leaf& leaf, const json& value) {
      return std::vector<Mutation>{wrong_type_mutations(leaf, value).front()};
    };
    add_mutations(cases, identifier(example), document, string_only,
                  [](const Leaf& leaf) { return leaf.first_in_parent; });
  }
  return cases;
}

std::vector<HostileCase> range_cases() {
  std::vector<HostileCase> cases;
  const MutationList ranges = [](const Leaf& leaf, const json&) { return range_mutations(leaf); };
  add_mutations(cases, "sink", kitchen_sink(), ranges, kitchen_leaf);
  add_mutations(cases, "sink", kitchen_sink_with_max_capture_size(), ranges, is_max_capture_size);
  for (const std::string& example : example_names()) {
    const json document = json::parse(example_text(example));
    const MutationList edges = [](const Leaf& leaf, const json&) {
      return std::vector<Mutation>{{"above_max", std::to_string(leaf.bounds.max + 1)}};
    };
    add_mutations(cases, identifier(example), document, edges, example_leaf);
  }
  return cases;
}

}  // namespace attnrt::testing
