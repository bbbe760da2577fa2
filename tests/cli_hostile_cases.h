#pragma once
// Hostile inputs for the `attnrt` CLI, run as a black box (tests/cli_hostile_input_test.cc).
// A case is an argv, optionally a config file (any bytes) or a special path, and the culprit the
// one-line error must name. Cases are grouped into classes, one parameterised suite each.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnrt::testing {

// What stands at the path "{CONFIG}" in the case's argv.
enum class ConfigInput {
  none,         // nothing: "{CONFIG}" names a missing file in a fresh directory
  text,         // a regular file holding `config` (bytes: NUL and invalid UTF-8 allowed)
  directory,    // a directory
  below_file,   // "<file>/child": a path through a regular file (ENOTDIR)
  fifo,         // a named pipe nobody writes to
  huge_garbage  // 64 MiB of spaces, then garbage
};

struct HostileCase {
  std::string name;               // [A-Za-z0-9_], unique within its class
  std::vector<std::string> args;  // after `attnrt`; "{CONFIG}" and "{DIR}" are substituted
  ConfigInput input = ConfigInput::none;
  std::string config;  // the file's bytes when input == text
  // Every entry must occur in stderr; an entry "a|b" is satisfied by either a or b.
  // "{CONFIG}" and "{DIR}" are substituted as in args.
  std::vector<std::string> culprits;
};

// gtest prints the case by its name (a config may be megabytes).
void PrintTo(const HostileCase& c, std::ostream* os);

// Case lists, one per class.
std::vector<HostileCase> wrong_type_cases();
std::vector<HostileCase> structure_type_cases();  // objects, lists, strings, booleans retyped
std::vector<HostileCase> unknown_key_cases();
std::vector<HostileCase> range_cases();
std::vector<HostileCase> accepted_wrong_cases();
std::vector<HostileCase> crash_cases();
std::vector<HostileCase> hang_cases();
std::vector<HostileCase> files_cases();
std::vector<HostileCase> cli_cases();
std::vector<HostileCase> encoding_cases();
std::vector<HostileCase> unclear_cases();
std::vector<HostileCase> hf_cases();  // engine arguments and Hugging Face config.json files

// Builders shared by the case files.
using nlohmann::json;

// The repository's examples/<name>.json, as text.
std::string example_text(const std::string& name);
std::vector<std::string> example_names();  // "llama-3-8b", ... sorted
// A valid config that sets every key of every section (docs/config.md): the mutation base.
json kitchen_sink();
// A small valid config: one full layer of 8/2 heads of 32, 4 MiB.
json small_config();
// `attnrt plan {CONFIG}` on `text`.
HostileCase plan_case(std::string name, std::string text, std::vector<std::string> culprits);
// `value` serialised with each "@@RAW<k>@@" string replaced by raw[k], unquoted: for numbers JSON
// libraries cannot hold (1e400), duplicate keys, and bytes that are not valid JSON strings.
std::string dump_with_raw(const json& value, const std::vector<std::string>& raw);
std::string raw_marker(std::size_t k);  // "@@RAW<k>@@"
// JSON pointer "/model/layers/1/layers/0/num_heads" as the loader's path
// "model.layers[1].layers[0].num_heads".
std::string loader_path(const json& document, const json::json_pointer& pointer);
// The same leaf in the expanded layer list ("model.layers[3].num_heads"), or "" outside layers.
std::string expanded_path(const json& document, const json::json_pointer& pointer);
// "a|b": the loader's path of `pointer`, or the expanded layer path that validate_config uses.
std::string culprit_path(const json& document, const json::json_pointer& pointer);
// `plan` on `document` with the value at `pointer` replaced by the JSON text `raw`, named
// "<base>_<path>_<label>", blaming culprit_path.
HostileCase replaced_case(const std::string& base_name, const json& document,
                          const json::json_pointer& pointer, const std::string& label,
                          const std::string& raw);
// "model.layers[1].layers[0].num_heads" -> "model_layers_1_layers_0_num_heads".
std::string identifier(const std::string& text);

}  // namespace attnrt::testing
