// Generated structural cases on the kitchen-sink config: every object and list given a scalar,
// every string a number, every boolean a string or a number, and an unknown key in every object.

#include <functional>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

using Visit = std::function<void(const json&, const json::json_pointer&)>;

// Every value of `value`, parents before children.
void walk(const json& value, const json::json_pointer& at, const Visit& visit) {
  visit(value, at);
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) walk(item, at / key, visit);
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) walk(value[i], at / i, visit);
  }
}

// The byte budget takes integers and strings alike; its wrong types are cases of their own.
bool is_memory(const json::json_pointer& at) {
  return at.to_string() == "/cache/memory";
}

// {"multiple_of": n} in kernel_block_sizes may be written as a plain size: 7 is valid there.
bool is_kernel_block_size(const json::json_pointer& at) {
  const json::json_pointer parent = at.parent_pointer();
  return !parent.empty() && parent.back() == "kernel_block_sizes";
}

}  // namespace

std::vector<HostileCase> structure_type_cases() {
  const json document = kitchen_sink();
  std::vector<HostileCase> cases;
  walk(document, json::json_pointer(), [&](const json& value, const json::json_pointer& at) {
    if (at.empty()) return;  // the document itself: see the Files cases
    if (value.is_structured()) {
      cases.push_back(replaced_case("sink", document, at, "as_string", "\"x\""));
      if (!is_kernel_block_size(at)) {
        cases.push_back(replaced_case("sink", document, at, "as_number", "7"));
      }
    } else if (value.is_string() && !is_memory(at)) {
      cases.push_back(replaced_case("sink", document, at, "as_number", "5"));
    } else if (value.is_boolean()) {
      cases.push_back(replaced_case("sink", document, at, "as_string", "\"true\""));
      cases.push_back(replaced_case("sink", document, at, "as_number", "1"));
    }
  });
  return cases;
}

std::vector<HostileCase> unknown_key_cases() {
  const json document = kitchen_sink();
  std::vector<HostileCase> cases;
  walk(document, json::json_pointer(), [&](const json& value, const json::json_pointer& at) {
    if (!value.is_object()) return;
    json changed = document;
    changed[at]["bogus_key"] = 1;
    const std::string path = loader_path(document, at);
    const std::string key_path = path.empty() ? "bogus_key" : path + ".bogus_key";
    cases.push_back(plan_case("sink_" + identifier(key_path), changed.dump(), {key_path}));
  });
  return cases;
}

}  // namespace attnrt::testing
