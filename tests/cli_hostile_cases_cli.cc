// Command-line cases: every option given a value outside what it accepts, typos of subcommands
// and flags, missing and extra arguments; and config mistakes whose messages must stay clear.

#include <string>
#include <tuple>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

// `attnrt <args>` must fail naming every culprit.
HostileCase cli(std::string name, std::vector<std::string> args,
                std::vector<std::string> culprits) {
  return {std::move(name), std::move(args), ConfigInput::none, "", std::move(culprits)};
}

// `attnrt run` on a one-request workload plus `option value`, so that an option the CLI wrongly
// accepts finishes quickly instead of running the default 64 requests.
HostileCase run_with(std::string name, const std::string& option, const std::string& value) {
  std::vector<std::string> args = {"run", "--requests", "1", "--prompt-len", "1:2", "--output-len",
                                   "1:2", "--compare",  "0"};
  for (std::size_t i = 1; i + 1 < args.size(); i += 2) {
    if (args[i] == option) args.erase(args.begin() + i, args.begin() + i + 2);
  }
  args.push_back(option);
  args.push_back(value);
  return cli(std::move(name), std::move(args), {option});
}

// A name part for an option value: "" -> "empty", "-1" -> "minus_1".
std::string value_label(const std::string& value) {
  if (value.empty()) return "empty";
  if (value.front() == ' ') return "space";
  if (value.front() == '-') return "minus_" + identifier(value);
  if (value.front() == '+') return "plus_" + identifier(value);
  return identifier(value);
}

}  // namespace

std::vector<HostileCase> cli_cases() {
  std::vector<HostileCase> cases = {
      cli("plan_empty_config_path", {"plan", ""}, {"CONFIG|config"}),
      cli("run_empty_config_path", {"run", ""}, {"CONFIG|config"}),
      cli("plan_extra_positional", {"plan", "a.json", "b.json"}, {"b.json"}),
      cli("run_extra_positional", {"run", "a.json", "b.json"}, {"b.json"}),
      cli("bench_attention_extra_positional", {"bench", "attention", "extra"}, {"extra"}),
      cli("bench_step_extra_positional", {"bench", "step", "extra"}, {"extra"}),
      cli("plan_memory_missing_value", {"plan", "--memory"}, {"--memory"}),
      cli("run_seed_missing_value", {"run", "--seed"}, {"--seed"}),
      cli("run_prompt_len_missing_value", {"run", "--prompt-len"}, {"--prompt-len"}),
      cli("bench_threads_missing_value", {"bench", "attention", "--threads"}, {"--threads"}),
      cli("plan_memory_twice", {"plan", "--memory", "1GiB", "--memory", "2GiB"}, {"--memory"}),
      cli("run_seed_twice", {"run", "--seed", "1", "--seed", "2"}, {"--seed"}),
      cli("plan_json_with_value", {"plan", "--json=maybe"}, {"--json"}),
      cli("run_check_with_value", {"run", "--check=maybe"}, {"--check"}),
      cli("plan_memory_empty_after_equals", {"plan", "--memory="}, {"--memory"}),
  };
  for (const char* memory :
       {"", "12parsecs", "0", "1e400GiB", "18446744073709551615", "-1", "1.5B", "GiB", "4 GiB GiB",
        "0x10", "281474976710657", "257TiB", " ", "nan", "inf", "+4GiB", "4,096"}) {
    cases.push_back(
        cli("plan_memory_" + value_label(memory), {"plan", "--memory", memory}, {"--memory"}));
  }
  cases.push_back(
      cli("plan_memory_holds_no_block", {"plan", "--memory", "1KiB"}, {"--memory|cache.memory"}));
  const std::vector<std::tuple<std::string, std::string, std::string>> run_options = {
      {"cudagraph_empty", "--cudagraph", ""},
      {"cudagraph_fulll", "--cudagraph", "FULLL"},
      {"cudagraph_lowercase", "--cudagraph", "full"},
      {"seed_negative", "--seed", "-1"},
      {"seed_letters", "--seed", "abc"},
      {"seed_empty", "--seed", ""},
      {"seed_2_pow_64", "--seed", "18446744073709551616"},
      {"seed_fraction", "--seed", "1.5"},
      {"seed_plus_sign", "--seed", "+1"},
      {"seed_hex", "--seed", "0x10"},
      {"requests_negative", "--requests", "-3"},
      {"requests_letters", "--requests", "abc"},
      {"requests_fraction", "--requests", "1.5"},
      {"requests_empty", "--requests", ""},
      {"requests_2_pow_31", "--requests", "2147483648"},
      {"output_len_zero_low", "--output-len", "0:5"},
      {"output_len_reversed", "--output-len", "9:3"},
      {"output_len_empty", "--output-len", ""},
      {"output_len_letters", "--output-len", "a:b"},
      {"prompt_len_zero_low", "--prompt-len", "0:5"},
      {"prompt_len_reversed", "--prompt-len", "9:3"},
      {"prompt_len_three_parts", "--prompt-len", "1:2:3"},
      {"prompt_len_empty", "--prompt-len", ""},
      {"prompt_len_colon_only", "--prompt-len", ":"},
      {"prompt_len_no_high", "--prompt-len", "5:"},
      {"prompt_len_no_low", "--prompt-len", ":5"},
      {"prompt_len_negative", "--prompt-len", "-1:5"},
      {"prompt_len_2_pow_31", "--prompt-len", "1:2147483648"},
      {"prompt_len_past_max_model_len", "--prompt-len", "2000:2000"},
      {"prompt_len_spaces", "--prompt-len", " 1 : 2 "},
      {"fast_prefill_maybe", "--fast-prefill", "maybe"},
      {"fast_prefill_empty", "--fast-prefill", ""},
      {"fast_prefill_uppercase", "--fast-prefill", "ON"},
      {"compare_negative", "--compare", "-1"},
      {"compare_100001", "--compare", "100001"},
      {"compare_letters", "--compare", "abc"},
  };
  for (const auto& [name, option, value] : run_options) {
    cases.push_back(run_with("run_" + name, option, value));
  }
  cases.push_back(cli("run_prompt_plus_output_past_max_model_len",
                      {"run", "--requests", "1", "--compare", "0", "--prompt-len", "1000:1000",
                       "--output-len", "100:100"},
                      {"--output-len|--prompt-len"}));
  json short_context = json::parse(example_text("tiny-yoco"));
  short_context["model"]["max_model_len"] = 64;
  cases.push_back({"run_prompt_plus_output_one_past_max_model_len",
                   {"run", "{CONFIG}", "--requests", "1", "--compare", "0", "--prompt-len", "40:40",
                    "--output-len", "25:25"},
                   ConfigInput::text,
                   short_context.dump(),
                   {"--output-len|--prompt-len"}});
  for (const char* threads : {"-1", "abc", "", "1.5", "2147483648"}) {
    cases.push_back(cli("bench_threads_" + value_label(threads),
                        {"bench", "attention", "--quick", "--threads", threads}, {"--threads"}));
  }
  return cases;
}

std::vector<HostileCase> unclear_cases() {
  std::vector<HostileCase> cases = {
      cli("subcommand_plna", {"plna"}, {"plna", "plan"}),
      cli("subcommand_rn", {"rn"}, {"rn", "run"}),
      cli("subcommand_bnch", {"bnch", "attention"}, {"bnch", "bench"}),
      cli("subcommand_empty", {""}, {"plan"}),
      cli("no_arguments", {}, {"plan"}),
      cli("bench_atention", {"bench", "atention"}, {"atention", "attention"}),
      cli("bench_stp", {"bench", "stp"}, {"stp", "step"}),
      cli("bench_without_target", {"bench"}, {"attention"}),
      cli("plan_flag_jsn", {"plan", "--jsn"}, {"--jsn"}),
      cli("run_flag_chek", {"run", "--chek"}, {"--chek"}),
      cli("bench_flag_hott", {"bench", "attention", "--hott"}, {"--hott"}),
      cli("global_flag_verbose", {"--verbose", "plan"}, {"--verbose"}),
      cli("plan_flag_single_dash", {"plan", "-memory", "1GiB"}, {"-memory"}),
  };
  json sink = kitchen_sink();
  const auto sink_with = [&](const std::string& patch) {
    json document = sink;
    document.merge_patch(json::parse(patch));
    return document.dump();
  };
  const std::string layer = R"({"num_heads": 8, "num_kv_heads": 2, "head_size": 32})";
  const auto add = [&](std::string name, std::string text, std::vector<std::string> culprits) {
    cases.push_back(plan_case(std::move(name), std::move(text), std::move(culprits)));
  };
  add("section_typo", R"({"model": {"layers": [)" + layer + R"(]}, "schedular": {}})",
      {"schedular", "scheduler"});
  add("profile_key_typo", sink_with(R"({"backends": [{"name": "X", "kernal": "CPU_FLASH"}]})"),
      {"backends[0].kernal", "kernel"});
  add("layout_typo", sink_with(R"({"cache": {"layout": "LBNCH"}})"), {"cache.layout"});
  add("cudagraph_mode_typo",
      sink_with(R"({"compilation": {"cudagraph_mode": "FULL_AND_PIECEWISEE"}})"),
      {"compilation.cudagraph_mode"});
  add("dtype_typo", sink_with(R"({"cache": {"dtype": "bfloat61"}})"), {"cache.dtype"});
  add("model_without_layers", R"({"model": {"name": "x"}})", {"model.layers"});
  add("no_model", R"({"cache": {}})", {"model"});
  add("empty_layers", R"({"model": {"layers": []}})", {"model.layers"});
  add("layers_not_an_array", R"({"model": {"layers": {}}})", {"model.layers"});
  add("empty_layer_object", R"({"model": {"layers": [{}]}})", {"model.layers[0].num_heads"});
  add("repeat_without_layers", R"({"model": {"layers": [{"repeat": 2}]}})",
      {"model.layers[0].layers"});
  add("repeat_with_empty_layers", R"({"model": {"layers": [{"repeat": 2, "layers": []}]}})",
      {"model.layers[0].layers"});
  add("repeat_layers_not_an_array", R"({"model": {"layers": [{"repeat": 2, "layers": 5}]}})",
      {"model.layers[0].layers"});
  add("layer_entry_string", R"({"model": {"layers": ["full"]}})", {"model.layers[0]"});
  add("layer_entry_null", R"({"model": {"layers": [null]}})", {"model.layers[0]"});
  for (const std::string section :
       {"cache", "compilation", "scheduler", "speculative", "parallel", "lora"}) {
    add(section + "_is_an_array",
        sink_with("{\"" + section + "\": null}").insert(1, "\"" + section + "\": [], "), {section});
  }
  add("backends_is_an_object",
      R"({"model": {"layers": [)" + layer + R"(]}, "backends": {"name": "X"}})", {"backends"});
  add("profile_is_a_string", R"({"model": {"layers": [)" + layer + R"(]}, "backends": ["X"]})",
      {"backends[0]"});
  add("kernel_block_sizes_not_a_list",
      sink_with(R"({"backends": [{"name": "X", "kernel_block_sizes": 16}]})"),
      {"backends[0].kernel_block_sizes"});
  add("kernel_block_sizes_empty",
      sink_with(R"({"backends": [{"name": "X", "kernel_block_sizes": []}]})"),
      {"backends[0].kernel_block_sizes"});
  add("kernel_block_size_string",
      sink_with(R"({"backends": [{"name": "X", "kernel_block_sizes": ["16"]}]})"),
      {"backends[0].kernel_block_sizes[0]"});
  add("kernel_block_size_unknown_key",
      sink_with(R"({"backends": [{"name": "X", "kernel_block_sizes": [{"multiple": 16}]}]})"),
      {"backends[0].kernel_block_sizes[0].multiple"});
  add("no_common_kernel_block_size",
      sink_with(R"({"backends": [{"name": "MY_PROFILE", "kernel": "CPU_REFERENCE",
                    "kernel_block_sizes": [7]}, {"name": "ENC_PROFILE"}]})"),
      {"backends[0].kernel_block_sizes|cache.block_size"});
  add("pages_that_do_not_unify",
      R"({"model": {"layers": [)" + layer +
          R"(, {"type": "mla", "num_heads": 8, "num_kv_heads": 1, "head_size": 24, "head_size_v": 16}]}})",
      {"model.layers[1]|model.layers.1.self_attn"});
  add("capture_sizes_disagree_with_max",
      sink_with(R"({"compilation": {"capture_sizes": [1, 2], "max_capture_size": 8}})"),
      {"compilation.max_capture_size"});
  add("memory_bool", sink_with(R"({"cache": {"memory": true}})"), {"cache.memory"});
  add("memory_float", sink_with(R"({"cache": {"memory": 1.5}})"), {"cache.memory"});
  add("memory_negative", sink_with(R"({"cache": {"memory": -1}})"), {"cache.memory"});
  add("memory_zero", sink_with(R"({"cache": {"memory": 0}})"), {"cache.memory"});
  add("memory_empty_string", sink_with(R"({"cache": {"memory": ""}})"), {"cache.memory"});
  add("memory_one_byte", sink_with(R"({"cache": {"memory": 1}})"), {"cache.memory"});
  return cases;
}

}  // namespace attnrt::testing
