// Hostile input through the Hugging Face door: vLLM's engine arguments given values outside what
// they accept, and config.json files the importer must refuse, each naming its culprit.

#include <string>
#include <tuple>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

// A Llama 3.1 8B config.json as Hugging Face publishes it (tests/data/hf/).
json llama_config() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_attention_heads", 32},
          {"num_hidden_layers", 32},
          {"num_key_value_heads", 8},
          {"max_position_embeddings", 131072},
          {"vocab_size", 128256},
          {"torch_dtype", "bfloat16"}};
}

HostileCase hf_plan(std::string name, const json& config, std::vector<std::string> extra,
                    std::vector<std::string> culprits) {
  std::vector<std::string> args = {"plan", "{CONFIG}", "--memory", "24GiB"};
  args.insert(args.end(), extra.begin(), extra.end());
  return {std::move(name), std::move(args), ConfigInput::text, config.dump(), std::move(culprits)};
}

}  // namespace

std::vector<HostileCase> hf_cases() {
  std::vector<HostileCase> cases;
  const std::vector<std::tuple<std::string, std::string, std::string>> engine_args = {
      {"max_model_len_zero", "--max-model-len", "0"},
      {"max_model_len_negative", "--max-model-len", "-1"},
      {"max_model_len_letters", "--max-model-len", "32k"},
      {"max_model_len_past_derived", "--max-model-len", "131073"},
      {"tp_zero", "--tensor-parallel-size", "0"},
      {"tp_three", "--tensor-parallel-size", "3"},
      {"tp_alias_five", "-tp", "5"},
      {"tp_past_limit", "--tensor-parallel-size", "1025"},
      {"block_size_zero", "--block-size", "0"},
      {"block_size_huge", "--block-size", "65537"},
      {"kv_cache_dtype_e5m2", "--kv-cache-dtype", "fp8_e5m2"},
      {"kv_cache_dtype_unknown", "--kv-cache-dtype", "int4"},
      {"kv_cache_dtype_empty", "--kv-cache-dtype", ""},
      {"num_gpu_blocks_override_zero", "--num-gpu-blocks-override", "0"},
      {"num_gpu_blocks_override_2_pow_31", "--num-gpu-blocks-override", "2147483648"},
      {"max_num_seqs_zero", "--max-num-seqs", "0"},
      {"max_num_batched_tokens_below_seqs", "--max-num-batched-tokens", "16"},
      {"device_memory_letters", "--device-memory", "lots"},
      {"device_memory_empty", "--device-memory", ""},
      {"gpu_memory_utilization_zero_without_device", "--gpu-memory-utilization", "0.5"},
      {"gpu_memory_utilization_above_one", "--gpu-memory-utilization", "1.5"},
      {"reserve_without_device", "--reserve", "1GiB"},
  };
  for (const auto& [name, option, value] : engine_args) {
    std::vector<std::string> extra = {option, value};
    // The device budget is refused with --memory given too; these cases test the value alone.
    HostileCase c = hf_plan("engine_arg_" + name, llama_config(), extra,
                            {option == "-tp" ? "--tensor-parallel-size" : option});
    if (option == "--max-num-batched-tokens") c.culprits = {"--max-num-batched-tokens"};
    cases.push_back(std::move(c));
  }
  cases.push_back(hf_plan("device_memory_with_memory", llama_config(), {"--device-memory", "80GiB"},
                          {"--device-memory", "--memory"}));
  cases.push_back({"device_memory_on_attnrt_config",
                   {"plan", "{CONFIG}", "--device-memory", "80GiB"},
                   ConfigInput::text,
                   example_text("llama-3-8b"),
                   {"--device-memory", "--memory"}});
  cases.push_back({"device_memory_too_small_for_the_weights",
                   {"plan", "{CONFIG}", "--device-memory", "8GiB"},
                   ConfigInput::text,
                   llama_config().dump(),
                   {"No available memory", "weights"}});
  cases.push_back({"run_does_not_fit",
                   {"run", "{CONFIG}", "--memory", "8GiB", "--requests", "1"},
                   ConfigInput::text,
                   llama_config().dump(),
                   {"estimated maximum model length is 65536"}});
  cases.push_back({"model_folder_without_config_json",
                   {"plan", "{DIR}"},
                   ConfigInput::none,
                   "",
                   {"{DIR}", "config.json"}});

  // config.json files the importer refuses, naming model_type and field.
  const auto with = [](const std::string& key, json value) {
    json config = llama_config();
    config[key] = std::move(value);
    return config;
  };
  const std::vector<std::tuple<std::string, json, std::vector<std::string>>> configs = {
      {"unknown_model_type", with("model_type", "llamma"), {"llamma", "llama"}},
      {"hybrid_model_type", with("model_type", "zamba2"), {"zamba2", "hybrid"}},
      {"model_type_number", with("model_type", 3), {"model_type"}},
      // Absent fields take LlamaConfig's defaults; an explicit null has none.
      {"no_heads", with("num_attention_heads", nullptr), {"llama", "num_attention_heads"}},
      {"no_layers", with("num_hidden_layers", nullptr), {"llama", "num_hidden_layers"}},
      {"heads_zero", with("num_attention_heads", 0), {"num_attention_heads"}},
      {"heads_string", with("num_attention_heads", "32"), {"num_attention_heads"}},
      {"kv_heads_not_dividing", with("num_key_value_heads", 7), {"num_kv_heads"}},
      {"head_dim_fraction", with("head_dim", 127.5), {"head_dim"}},
      {"hidden_not_multiple", with("hidden_size", 4097), {"hidden_size"}},
      {"layers_huge", with("num_hidden_layers", 100001), {"num_hidden_layers"}},
      {"layers_negative", with("num_hidden_layers", -2), {"num_hidden_layers"}},
      {"layer_types_short", with("layer_types", json::array({"full_attention"})), {"layer_types"}},
      {"layer_types_mamba",
       with("layer_types", json(std::vector<std::string>(32, "mamba"))),
       {"layer_types", "mamba"}},
      {"layer_types_unknown",
       with("layer_types", json(std::vector<std::string>(32, "global"))),
       {"layer_types", "global"}},
      {"sliding_window_negative", with("sliding_window", -5), {"sliding_window"}},
      {"rope_yarn_without_original",
       with("rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}),
       {"original_max_position_embeddings"}},
      {"text_config_string", with("text_config", "gemma"), {"text_config"}},
      {"dtype_unknown", with("torch_dtype", "float8"), {"torch_dtype"}},
      {"architectures_not_list", with("architectures", "LlamaForCausalLM"), {"architectures"}},
      {"max_position_zero", with("max_position_embeddings", 0), {"max_position_embeddings"}},
  };
  for (const auto& [name, config, culprits] : configs) {
    cases.push_back(hf_plan("config_" + name, config, {}, culprits));
  }
  return cases;
}

}  // namespace attnrt::testing
