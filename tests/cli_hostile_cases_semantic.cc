// Hand-written config cases: inputs a loader accepts by accident (duplicate keys, contradicting
// profiles), sizes whose arithmetic overflows, and inputs that make a naive tool run forever.

#include <fmt/format.h>

#include <string>

#include "cli_hostile_cases.h"

namespace attnrt::testing {
namespace {

const std::string kLayer = R"({"num_heads": 8, "num_kv_heads": 2, "head_size": 32})";

// `depth` repeat blocks, each `count` times, around `layer`.
std::string nested_repeats(std::size_t depth, int count, const std::string& layer) {
  std::string text;
  const std::string open = R"({"repeat": )" + std::to_string(count) + R"(, "layers": [)";
  text.reserve(depth * (open.size() + 2) + layer.size());
  for (std::size_t i = 0; i < depth; ++i) text += open;
  text += layer;
  for (std::size_t i = 0; i < depth; ++i) text += "]}";
  return text;
}

// A config of `layers`, other `sections` ("\"cache\": {...}") and `model_fields` ("\"a\": 1, ").
std::string with_layers(const std::string& layers, const std::string& sections = "",
                        const std::string& model_fields = R"("max_model_len": 256, )") {
  return R"({"model": {)" + model_fields + R"("layers": [)" + layers + "]}" +
         (sections.empty() ? "" : ", " + sections) + "}";
}

std::string nested_objects(std::size_t depth) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += R"({"a":)";
  return text + "1" + std::string(depth, '}');
}

// The kitchen sink with `patch` merged in (RFC 7386: null deletes).
std::string sink_with(const std::string& patch) {
  json document = kitchen_sink();
  document.merge_patch(json::parse(patch));
  return document.dump();
}

// The kitchen sink's MY_PROFILE (backends[0]) with `fields` replaced.
std::string sink_profile_with(const json& fields) {
  json document = kitchen_sink();
  for (const auto& [key, value] : fields.items()) document["backends"][0][key] = value;
  return document.dump();
}

std::string tiny_yoco_with(const std::string& patch) {
  json document = json::parse(example_text("tiny-yoco"));
  document.merge_patch(json::parse(patch));
  return document.dump();
}

HostileCase run_case(std::string name, std::string text, std::vector<std::string> culprits) {
  return {std::move(name),
          {"run", "{CONFIG}", "--requests", "1", "--prompt-len", "1:2", "--output-len", "1:2",
           "--compare", "0"},
          ConfigInput::text,
          std::move(text),
          std::move(culprits)};
}

std::string int_list(std::size_t count, int value) {
  std::string text = "[";
  for (std::size_t i = 0; i < count; ++i) text += fmt::format("{}{}", i ? "," : "", value);
  return text + "]";
}

const std::string kIntMax = "2147483647";

}  // namespace

std::vector<HostileCase> accepted_wrong_cases() {
  const std::string layer_dup =
      R"({"num_heads": 8, "num_heads": 16, "num_kv_heads": 2, "head_size": 32})";
  return {
      plan_case(
          "duplicate_model",
          R"({"model": {"layers": [)" + kLayer + R"(]}, "model": {"layers": [)" + kLayer + "]}}",
          {"model"}),
      plan_case("duplicate_cache_block_size",
                with_layers(kLayer, R"("cache": {"block_size": 16, "block_size": 32})"),
                {"cache.block_size"}),
      plan_case("duplicate_identical_value",
                with_layers(kLayer, R"("cache": {"block_size": 16, "block_size": 16})"),
                {"cache.block_size"}),
      plan_case("duplicate_layer_num_heads", with_layers(layer_dup), {"model.layers[0].num_heads"}),
      plan_case("duplicate_in_repeat_layer",
                with_layers(R"({"repeat": 2, "layers": [)" + layer_dup + "]}"),
                {"model.layers[0].layers[0].num_heads|model.layers[0].num_heads"}),
      plan_case("duplicate_repeat_count",
                with_layers(R"({"repeat": 2, "repeat": 3, "layers": [)" + kLayer + "]}"),
                {"model.layers[0].repeat"}),
      plan_case("duplicate_scheduler_section",
                with_layers(kLayer, R"("scheduler": {"max_num_seqs": 8}, "scheduler": {})"),
                {"scheduler"}),
      plan_case("duplicate_profile_name",
                with_layers(kLayer, R"("backends": [{"name": "A", "name": "B"}])"),
                {"backends[0].name"}),
      plan_case("profile_layouts_exclude_cache_layout",
                sink_profile_with({{"kv_cache_layouts", json::array({"LBHNC"})}}),
                {"kv_cache_layouts"}),
      plan_case("varlen_bound_on_never_profile",
                sink_profile_with({{"cudagraph_support", "NEVER"}}),
                {"varlen_cudagraph_max_query_len"}),
      plan_case("capture_sizes_4097_entries",
                sink_with(R"({"compilation": {"capture_sizes": )" + int_list(4097, 1) + "}}"),
                {"compilation.capture_sizes"}),
      plan_case("lora_capture_cases_1025_entries",
                sink_with(R"({"lora": {"capture_cases": )" + int_list(1025, 0) + "}}"),
                {"lora.capture_cases"}),
      plan_case("model_name_257_bytes",
                sink_with(R"({"model": {"name": ")" + std::string(257, 'm') + "\"}}"),
                {"model.name"}),
      plan_case("layer_name_257_bytes",
                with_layers(R"({"name": ")" + std::string(257, 'n') +
                            R"(", "num_heads": 8, "num_kv_heads": 2, "head_size": 32})"),
                {"model.layers[0].name"}),
      plan_case("profile_name_257_bytes",
                with_layers(kLayer, R"("backends": [{"name": ")" + std::string(257, 'p') + "\"}]"),
                {"backends[0].name"}),
      plan_case("repeat_nested_17_deep", with_layers(nested_repeats(17, 1, kLayer)),
                {"model.layers[0].layers[0]"}),
      // More blocks than int32 block ids can name: 256 TiB of tiny-yoco's 16 KiB blocks.
      {"memory_flag_more_blocks_than_block_ids",
       {"plan", "--memory", "256TiB"},
       ConfigInput::none,
       "",
       {"--memory|cache.memory"}},
      plan_case("memory_above_256TiB",
                with_layers(kLayer, R"("cache": {"memory": 281474976710657})"), {"cache.memory"}),
      plan_case("memory_string_above_256TiB",
                with_layers(kLayer, R"("cache": {"memory": "256.5TiB"})"), {"cache.memory"}),
      plan_case("memory_uint64_max",
                with_layers(kLayer, R"("cache": {"memory": 18446744073709551615})"),
                {"cache.memory"}),
  };
}

std::vector<HostileCase> crash_cases() {
  const std::string huge_layer = R"({"num_heads": )" + kIntMax + R"(, "num_kv_heads": )" + kIntMax +
                                 R"(, "head_size": )" + kIntMax + "}";
  const std::string in_range_max =
      R"({"num_heads": 16384, "num_kv_heads": 16384, "head_size": 16384, "head_size_v": 16384})";
  const std::string field = "model.layers[0].";
  return {
      plan_case("block_size_int_max",
                with_layers(kLayer, R"("cache": {"block_size": )" + kIntMax + "}"),
                {"cache.block_size"}),
      plan_case("heads_and_head_size_int_max", with_layers(huge_layer),
                {field + "num_heads|" + field + "num_kv_heads|" + field + "head_size"}),
      plan_case("every_factor_int_max",
                with_layers(huge_layer,
                            R"("cache": {"block_size": )" + kIntMax + R"(, "dtype": "float32"})"),
                {field + "num_heads|" + field + "num_kv_heads|" + field + "head_size|" +
                 "cache.block_size"}),
      // In range, but 100 000 slots of 2^47-byte pages need 1.4e19 bytes a block: past int64.
      plan_case(
          "in_range_block_past_int64",
          with_layers(nested_repeats(1, 100000, in_range_max),
                      R"("cache": {"block_size": 65536, "dtype": "float32", "memory": "256TiB"})"),
          {"cache.memory"}),
      plan_case(
          "num_speculative_tokens_int_max",
          with_layers(kLayer, R"("speculative": {"num_speculative_tokens": )" + kIntMax + "}"),
          {"speculative.num_speculative_tokens"}),
      plan_case("max_num_seqs_2_pow_30",
                with_layers(kLayer, R"("scheduler": {"max_num_seqs": 1073741824,
                    "max_num_batched_tokens": 1073741824})"),
                {"scheduler.max_num_seqs|scheduler.max_num_batched_tokens"}),
      plan_case("max_num_seqs_2_pow_30_alone",
                with_layers(kLayer, R"("scheduler": {"max_num_seqs": 1073741824})"),
                {"scheduler.max_num_seqs"}),
      plan_case(
          "max_capture_size_int_max",
          with_layers(kLayer, R"("compilation": {"max_capture_size": )" + kIntMax +
                                  R"(}, "scheduler": {"max_num_batched_tokens": )" + kIntMax + "}"),
          {"compilation.max_capture_size|scheduler.max_num_batched_tokens"}),
      plan_case("max_capture_size_int_max_minus_1",
                with_layers(kLayer, R"("compilation": {"max_capture_size": 2147483646})"),
                {"compilation.max_capture_size"}),
      plan_case("capture_size_int_max",
                with_layers(kLayer, R"("compilation": {"capture_sizes": [)" + kIntMax +
                                        R"(]}, "scheduler": {"max_num_batched_tokens": )" +
                                        kIntMax + "}"),
                {"compilation.capture_sizes[0]|scheduler.max_num_batched_tokens"}),
      plan_case("max_model_len_int_max_block_1",
                with_layers(kLayer, R"("cache": {"block_size": 1})",
                            R"("max_model_len": )" + kIntMax + ", "),
                {"model.max_model_len"}),
      plan_case("max_encoder_len_int_max",
                sink_with(R"({"model": {"max_encoder_len": )" + kIntMax + "}}"),
                {"model.max_encoder_len"}),
      plan_case("num_ubatches_int_max",
                with_layers(kLayer, R"("parallel": {"num_ubatches": )" + kIntMax + "}"),
                {"parallel.num_ubatches"}),
      plan_case("tensor_parallel_size_int_max",
                with_layers(kLayer, R"("parallel": {"tensor_parallel_size": )" + kIntMax + "}"),
                {"parallel.tensor_parallel_size"}),
      plan_case("kernel_block_size_int_max",
                sink_profile_with({{"kernel_block_sizes", json::array({2147483647})}}),
                {"backends[0].kernel_block_sizes[0]"}),
      plan_case("multiple_of_int_max",
                sink_profile_with(
                    {{"kernel_block_sizes", json::array({json{{"multiple_of", 2147483647}}})}}),
                {"backends[0].kernel_block_sizes[0]"}),
      plan_case("varlen_bound_int_max_on_always",
                sink_profile_with({{"cudagraph_support", "ALWAYS"},
                                   {"varlen_cudagraph_max_query_len", 2147483647}}),
                {"backends[0].varlen_cudagraph_max_query_len"}),
      plan_case("repeat_nested_100000_deep", with_layers(nested_repeats(100000, 1, kLayer)),
                {"{CONFIG}|model.layers[0].layers[0]"}),
      plan_case("arrays_nested_100000_deep",
                with_layers(std::string(100000, '[') + std::string(100000, ']')),
                {"{CONFIG}|model.layers[0]"}),
      plan_case("objects_nested_100000_deep_as_a_name",
                with_layers(R"({"num_heads": 8, "head_size": 32, "name": )" +
                            nested_objects(100000) + "}"),
                {"{CONFIG}|model.layers[0].name"}),
      run_case("run_hidden_size_past_range",
               tiny_yoco_with(R"({"model": {"hidden_size": 1048577}})"), {"model.hidden_size"}),
      run_case("run_vocab_size_past_range",
               tiny_yoco_with(R"({"model": {"vocab_size": 16777217}})"), {"model.vocab_size"}),
  };
}

std::vector<HostileCase> hang_cases() {
  const std::string big_name = std::string(1 << 20, 'x');
  return {
      {"dev_zero_as_config", {"plan", "/dev/zero"}, ConfigInput::none, "", {"/dev/zero"}},
      {"fifo_as_config", {"plan", "{CONFIG}"}, ConfigInput::fifo, "", {"{CONFIG}"}},
      {"huge_garbage_file", {"plan", "{CONFIG}"}, ConfigInput::huge_garbage, "", {"{CONFIG}"}},
      plan_case("repeat_product_10_pow_10", with_layers(nested_repeats(2, 100000, kLayer)),
                {"model.layers[0]"}),
      plan_case("repeat_product_16_levels", with_layers(nested_repeats(16, 100000, kLayer)),
                {"model.layers[0]"}),
      plan_case("repeat_100000_of_two_layers",
                with_layers(R"({"repeat": 100000, "layers": [)" + kLayer + "," + kLayer + "]}"),
                {"model.layers[0]"}),
      plan_case(
          "repeat_100000_of_a_1MiB_name",
          with_layers(nested_repeats(
              1, 100000, R"({"name": ")" + big_name + R"({i}", "num_heads": 8, "head_size": 32})")),
          {"model.layers[0].layers[0].name|model.layers[0].name"}),
      {"run_requests_int_max",
       {"run", "--requests", kIntMax},
       ConfigInput::none,
       "",
       {"--requests"}},
      {"run_requests_100001",
       {"run", "--requests", "100001"},
       ConfigInput::none,
       "",
       {"--requests"}},
      {"run_output_len_100000",
       {"run", "--requests", "1", "--compare", "0", "--output-len", "10:100000"},
       ConfigInput::none,
       "",
       {"--output-len"}},
      {"bench_threads_100000",
       {"bench", "attention", "--quick", "--threads", "100000"},
       ConfigInput::none,
       "",
       {"--threads"}},
      {"bench_threads_1025",
       {"bench", "attention", "--quick", "--threads", "1025"},
       ConfigInput::none,
       "",
       {"--threads"}},
  };
}

}  // namespace attnrt::testing
