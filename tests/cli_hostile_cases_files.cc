// Config files that are not config files (missing, a directory, a pipe, truncated, garbage), and
// bytes a terminal would interpret: control characters and invalid UTF-8 in names and values.

#include <fmt/format.h>

#include <cctype>
#include <string>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

HostileCase path_case(std::string name, std::vector<std::string> args, ConfigInput input,
                      std::vector<std::string> culprits) {
  return {std::move(name), std::move(args), input, "", std::move(culprits)};
}

// Cuts of an example that never close its top-level object: every one is invalid JSON.
std::vector<HostileCase> truncated_examples() {
  std::vector<HostileCase> cases;
  for (const std::string& example : example_names()) {
    std::string text = example_text(example);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    const std::size_t n = text.size();
    for (const std::size_t cut : {std::size_t{1}, n / 3, n / 2, 2 * n / 3, n - 1}) {
      cases.push_back(plan_case(identifier(example) + "_cut_at_" + std::to_string(cut),
                                text.substr(0, cut), {"{CONFIG}"}));
    }
  }
  return cases;
}

// The small config's layer with `field` set to the JSON text `value`.
std::string small_with_layer_field(const std::string& field, const std::string& value) {
  json document = small_config();
  document["model"]["layers"][0][field] = raw_marker(0);
  return dump_with_raw(document, {value});
}

// Two layers, the second sharing the first's cache through `target` (JSON text).
std::string small_with_target(const std::string& target) {
  json document = small_config();
  json second = document["model"]["layers"][0];
  second["kv_sharing_target"] = raw_marker(0);
  document["model"]["layers"].push_back(second);
  return dump_with_raw(document, {target});
}

std::string small_with(const std::string& pointer, const std::string& value) {
  json document = small_config();
  document[json::json_pointer(pointer)] = raw_marker(0);
  return dump_with_raw(document, {value});
}

// A profile "P<value>" that layer 0 uses: the name appears in both places.
std::string small_with_profile_name(const std::string& name) {
  json document = small_config();
  document["backends"] = json::array({{{"name", raw_marker(0)}}});
  document["model"]["layers"][0]["backend"] = raw_marker(0);
  return dump_with_raw(document, {name});
}

struct ControlChar {
  std::string label;
  std::string escaped;  // as a JSON escape inside a string
};

const std::vector<ControlChar> kControlChars = {
    {"nul", "\\u0000"}, {"esc", "\\u001b[31m"}, {"newline", "\\n"}, {"del", "\\u007f"}};

}  // namespace

std::vector<HostileCase> files_cases() {
  std::vector<HostileCase> cases = {
      path_case("missing_file", {"plan", "{CONFIG}"}, ConfigInput::none, {"{CONFIG}"}),
      path_case("missing_directory", {"plan", "{DIR}/no/such/dir/config.json"}, ConfigInput::none,
                {"{DIR}/no/such/dir/config.json"}),
      path_case("directory", {"plan", "{CONFIG}"}, ConfigInput::directory, {"{CONFIG}"}),
      path_case("path_through_a_file", {"plan", "{CONFIG}/child.json"}, ConfigInput::below_file,
                {"{CONFIG}/child.json"}),
      path_case("trailing_slash_on_a_file", {"plan", "{CONFIG}/"}, ConfigInput::below_file,
                {"{CONFIG}/"}),
      path_case("name_too_long", {"plan", "{DIR}/" + std::string(5000, 'a') + ".json"},
                ConfigInput::none, {std::string(200, 'a')}),
      path_case("dev_null", {"plan", "/dev/null"}, ConfigInput::none, {"/dev/null"}),
      path_case("run_missing_file", {"run", "{CONFIG}"}, ConfigInput::none, {"{CONFIG}"}),
      path_case("run_directory", {"run", "{CONFIG}"}, ConfigInput::directory, {"{CONFIG}"}),
      path_case("run_path_through_a_file", {"run", "{CONFIG}/child.json"}, ConfigInput::below_file,
                {"{CONFIG}/child.json"}),
      plan_case("empty_file", "", {"{CONFIG}"}),
      plan_case("only_whitespace", "  \n\t\n  ", {"{CONFIG}"}),
      plan_case("trailing_garbage", small_config().dump() + " x", {"{CONFIG}"}),
      plan_case("two_documents", small_config().dump() + small_config().dump(), {"{CONFIG}"}),
      plan_case("line_comment", "// a comment\n" + small_config().dump(), {"{CONFIG}"}),
      plan_case("top_level_array", fmt::format("[{}]", small_config().dump()), {"top level"}),
      plan_case("top_level_string", "\"model\"", {"top level"}),
      plan_case("top_level_null", "null", {"top level"}),
      plan_case("top_level_number", "42", {"top level"}),
  };
  for (HostileCase& c : truncated_examples()) cases.push_back(std::move(c));
  return cases;
}

std::vector<HostileCase> encoding_cases() {
  std::vector<HostileCase> cases;
  for (const ControlChar& c : kControlChars) {
    const std::string name = "\"a" + c.escaped + "b\"";
    cases.push_back(
        plan_case("model_name_" + c.label, small_with("/model/name", name), {"model.name"}));
    cases.push_back(plan_case("layer_name_" + c.label, small_with_layer_field("name", name),
                              {"model.layers[0].name"}));
    cases.push_back(plan_case("kv_sharing_target_" + c.label,
                              small_with_target("\"model.layers.0.self_attn" + c.escaped + "\""),
                              {"model.layers[1].kv_sharing_target"}));
    cases.push_back(plan_case("layer_backend_" + c.label,
                              small_with_layer_field("backend", "\"CPU_FLASH" + c.escaped + "\""),
                              {"model.layers[0].backend"}));
    cases.push_back(plan_case("profile_name_" + c.label, small_with_profile_name(name),
                              {"backends[0].name|model.layers[0].backend"}));
  }
  const std::string esc = "\\u001b[2J";
  const std::vector<std::pair<std::string, std::string>> named_values = {
      {"/cache/dtype", "cache.dtype"},
      {"/cache/layout", "cache.layout"},
      {"/cache/memory", "cache.memory"},
      {"/compilation/cudagraph_mode", "compilation.cudagraph_mode"},
      {"/model/layers/0/type", "model.layers[0].type"},
  };
  for (const auto& [pointer, path] : named_values) {
    cases.push_back(
        plan_case("esc_in_" + identifier(path), small_with(pointer, "\"x" + esc + "\""), {path}));
  }
  const auto add = [&](std::string name, std::string text, std::string culprit) {
    cases.push_back(plan_case(std::move(name), std::move(text), {std::move(culprit)}));
  };
  add("esc_in_profile_kernel",
      small_with("/backends", R"([{"name": "P", "kernel": "X)" + esc + "\"}]"),
      "backends[0].kernel");
  add("esc_in_cudagraph_support",
      small_with("/backends", R"([{"name": "P", "cudagraph_support": "X)" + esc + "\"}]"),
      "backends[0].cudagraph_support");
  add("esc_in_profile_layout",
      small_with("/backends", R"([{"name": "P", "kv_cache_layouts": ["X)" + esc + "\"]}]"),
      "backends[0].kv_cache_layouts[0]");
  add("esc_in_spec_kind",
      small_with("/backends", R"([{"name": "P", "spec_kinds": ["X)" + esc + "\"]}]"),
      "backends[0].spec_kinds[0]");
  add("esc_in_unknown_key", small_with("/cache", R"({"blo)" + esc + R"(ck": 1})"), "cache.blo");
  add("esc_in_unknown_section", R"({"mo)" + esc + R"(del": {}})", "mo");
  add("esc_in_placeholder", small_with_layer_field("name", "\"layer{" + esc + "}\""),
      "model.layers[0].name");
  add("tab_in_layer_name", small_with_layer_field("name", "\"a\\tb\""), "model.layers[0].name");
  add("cr_in_layer_name", small_with_layer_field("name", "\"a\\rb\""), "model.layers[0].name");
  add("bel_in_model_name", small_with("/model/name", "\"a\\u0007b\""), "model.name");
  // Bytes the JSON grammar forbids, or allows only raw (DEL).
  add("raw_esc_in_string", small_with_layer_field("name", "\"a\x1b[31mb\""), "{CONFIG}");
  add("raw_newline_in_string", small_with_layer_field("name", "\"a\nb\""), "{CONFIG}");
  add("raw_nul_in_string", small_with_layer_field("name", std::string("\"a\0b\"", 5)), "{CONFIG}");
  add("raw_del_in_string",
      small_with_layer_field("name",
                             "\"a\x7f"
                             "b\""),
      "model.layers[0].name");
  add("raw_del_outside_string", small_with_layer_field("num_heads", "8\x7f"), "{CONFIG}");
  add("raw_esc_outside_string", small_with_layer_field("num_heads", "8\x1b[2J"), "{CONFIG}");
  add("raw_nul_outside_string", small_with_layer_field("num_heads", std::string("8\0", 2)),
      "{CONFIG}");
  // Invalid UTF-8, inside and outside strings.
  const std::vector<std::pair<std::string, std::string>> bad_utf8 = {
      {"ff", "\xff"},
      {"overlong_slash", "\xc0\xaf"},
      {"surrogate", "\xed\xa0\x80"},
      {"lone_continuation", "\x80"},
      {"truncated_sequence", "\xe2\x82"},
      {"c1_csi", "\x9b"}};
  for (const auto& [label, bytes] : bad_utf8) {
    add("utf8_" + label + "_in_name", small_with_layer_field("name", "\"a" + bytes + "b\""),
        "{CONFIG}|model.layers[0].name");
  }
  add("utf8_ff_outside_string", small_with_layer_field("num_heads", "8\xff"), "{CONFIG}");
  add("utf8_ff_as_key", small_with("/cache", "{\"\xff\": 1}"), "{CONFIG}|cache.");
  add("escaped_lone_surrogate", small_with_layer_field("name", "\"a\\ud800b\""),
      "{CONFIG}|model.layers[0].name");
  // Control bytes in arguments.
  cases.push_back(
      {"arg_memory_esc", {"plan", "--memory", "4GiB\x1b[2J"}, ConfigInput::none, "", {"--memory"}});
  cases.push_back(
      {"arg_memory_newline", {"plan", "--memory", "4\nGiB"}, ConfigInput::none, "", {"--memory"}});
  cases.push_back({"arg_memory_invalid_utf8",
                   {"plan", "--memory", "4\xffGiB"},
                   ConfigInput::none,
                   "",
                   {"--memory"}});
  cases.push_back({"arg_subcommand_esc", {"pl\x1b[2Jan"}, ConfigInput::none, "", {"pl"}});
  cases.push_back({"arg_flag_esc", {"plan", "--js\x1bon"}, ConfigInput::none, "", {"--js"}});
  cases.push_back({"arg_cudagraph_esc",
                   {"run", "--cudagraph", "FULL\x1b[31m"},
                   ConfigInput::none,
                   "",
                   {"--cudagraph"}});
  cases.push_back({"arg_seed_esc", {"run", "--seed", "1\x1b"}, ConfigInput::none, "", {"--seed"}});
  cases.push_back({"arg_prompt_len_newline",
                   {"run", "--prompt-len", "1:\n2"},
                   ConfigInput::none,
                   "",
                   {"--prompt-len"}});
  cases.push_back({"arg_config_path_newline",
                   {"plan", "{DIR}/evil\nname.json"},
                   ConfigInput::none,
                   "",
                   {"name.json"}});
  cases.push_back({"arg_config_path_esc",
                   {"plan", "{DIR}/evil\x1b]0;title\x07name.json"},
                   ConfigInput::none,
                   "",
                   {"name.json"}});
  return cases;
}

}  // namespace attnrt::testing
