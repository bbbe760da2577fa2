// ExtremeValid: inputs at the edges of the documented ranges that `attnrt` must accept and plan
// (or run): 100 000 layers, budgets that fit exactly, the largest heads, windows and limits.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>

#include "cli_hostile_runner.h"

namespace attnrt::testing {
namespace {

struct ValidCase {
  std::string name;
  std::vector<std::string> args;           // "{CONFIG}" is the config below
  std::string config;                      // empty: no file
  std::optional<std::int64_t> num_blocks;  // kv_cache.num_blocks the JSON plan must report
  bool print_time = false;
};

void PrintTo(const ValidCase& c, std::ostream* os) {
  *os << c.name;
}

// Bytes of one manager block of one layer: tokens × KV heads × (K + V head sizes) × element size.
std::int64_t page_bytes(std::int64_t block_size, std::int64_t kv_heads, std::int64_t head_size,
                        std::int64_t head_size_v, std::int64_t dtype_bytes) {
  return block_size * kv_heads * (head_size + head_size_v) * dtype_bytes;
}

std::int64_t cdiv(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

json uniform_model(int layers, int heads, int kv_heads, int head_size, int max_model_len) {
  const json layer = {{"num_heads", heads}, {"num_kv_heads", kv_heads}, {"head_size", head_size}};
  return {{"max_model_len", max_model_len},
          {"layers", json::array({{{"repeat", layers}, {"layers", json::array({layer})}}})}};
}

// Plan text and plan JSON of one config; the JSON must report `blocks`.
void add_plan_pair(std::vector<ValidCase>& cases, const std::string& name, const json& config,
                   std::optional<std::int64_t> blocks, bool print_time = false) {
  cases.push_back({name + "_text", {"plan", "{CONFIG}"}, config.dump(), std::nullopt, print_time});
  cases.push_back(
      {name + "_json", {"plan", "{CONFIG}", "--json"}, config.dump(), blocks, print_time});
}

// The brief's model: 100 000 layers of 8 heads of 64, and exactly the bytes one 4096-token
// request needs in every layer (bf16, blocks of 16).
void add_large_models(std::vector<ValidCase>& cases) {
  const std::int64_t request_blocks = cdiv(4096, 16);
  const std::int64_t budget = 100000 * page_bytes(16, 8, 64, 64, 2) * request_blocks;
  json config = {{"model", uniform_model(100000, 8, 8, 64, 4096)}, {"cache", {{"memory", budget}}}};
  add_plan_pair(cases, "plan_100000_layers", config, request_blocks, true);

  // One layer of the largest heads and blocks: a 2^47-byte page, two of them in 256 TiB.
  const json largest = {
      {"num_heads", 16384}, {"num_kv_heads", 16384}, {"head_size", 16384}, {"head_size_v", 16384}};
  add_plan_pair(cases, "largest_heads_and_block",
                {{"model", {{"max_model_len", 65536}, {"layers", json::array({largest})}}},
                 {"cache", {{"block_size", 65536}, {"dtype", "float32"}, {"memory", "256TiB"}}}},
                (std::int64_t{1} << 48) / page_bytes(65536, 16384, 16384, 16384, 4));

  // The longest context in the smallest heads, with the most blocks block ids allow: 2^30 pages
  // of 65536 tokens in 256 TiB (smaller pages would need more than 2^31 - 1 block ids).
  add_plan_pair(cases, "longest_context_smallest_heads",
                {{"model", uniform_model(1, 1, 1, 1, 1 << 26)},
                 {"cache", {{"block_size", 65536}, {"memory", std::int64_t{1} << 48}}}},
                (std::int64_t{1} << 48) / page_bytes(65536, 1, 1, 1, 2));
}

// Budgets that fit exactly: one block per layer slot when max_model_len is one block, and one
// full max_model_len request for a Llama-3-8B shape. Text and JSON must both accept them.
void add_exact_budgets(std::vector<ValidCase>& cases) {
  const std::int64_t page = page_bytes(16, 2, 32, 32, 2);
  add_plan_pair(cases, "one_block_per_layer_slot",
                {{"model", uniform_model(4, 8, 2, 32, 16)}, {"cache", {{"memory", 4 * page}}}}, 1);

  const json owner = {{"num_heads", 8}, {"num_kv_heads", 2}, {"head_size", 32}};
  json sharer = owner;
  sharer["kv_sharing_target"] = "model.layers.{r}.self_attn";
  const json sharing = {
      {"model",
       {{"max_model_len", 16},
        {"layers", json::array({json{{"repeat", 2}, {"layers", json::array({owner})}},
                                json{{"repeat", 2}, {"layers", json::array({sharer})}}})}}},
      {"cache", {{"memory", 2 * page}}}};
  add_plan_pair(cases, "one_block_per_layer_slot_with_kv_sharing", sharing, 1);

  const std::int64_t llama_blocks = cdiv(8192, 16);
  add_plan_pair(cases, "one_request_exactly_llama_shape",
                {{"model", uniform_model(32, 32, 8, 128, 8192)},
                 {"cache", {{"memory", 32 * page_bytes(16, 8, 128, 128, 2) * llama_blocks}}}},
                llama_blocks);
}

json small_layer(const std::string& type = "full") {
  return {{"type", type}, {"num_heads", 8}, {"num_kv_heads", 2}, {"head_size", 32}};
}

void add_limits(std::vector<ValidCase>& cases) {
  json sliding = small_layer("sliding_window");
  sliding["sliding_window"] = 1 << 26;
  json chunked = small_layer("chunked_local");
  chunked["attention_chunk_size"] = 1 << 26;
  add_plan_pair(
      cases, "windows_and_lengths_at_max",
      {{"model",
        {{"max_model_len", 1 << 26},
         {"max_encoder_len", 1 << 26},
         {"hidden_size", 1 << 20},
         {"vocab_size", 1 << 24},
         {"layers", json::array({small_layer(), sliding, chunked, small_layer("cross")})}}},
       {"cache", {{"memory", "4TiB"}}}},  // 2^30 blocks: int32 block ids
      std::nullopt);

  json lora = json::array();
  for (int i = 0; i < 1024; ++i) lora.push_back(i * 64);
  add_plan_pair(cases, "scheduler_and_graph_limits_at_max",
                {{"model", {{"layers", json::array({small_layer()})}}},
                 {"compilation", {{"max_capture_size", 1 << 21}}},
                 {"scheduler", {{"max_num_seqs", 65536}, {"max_num_batched_tokens", 1 << 21}}},
                 {"speculative", {{"num_speculative_tokens", 128}}},
                 {"parallel", {{"num_ubatches", 16}}},
                 {"lora", {{"capture_cases", lora}}}},
                std::nullopt);

  json sizes = json::array();
  for (int i = 1; i <= 4096; ++i) sizes.push_back(i);
  add_plan_pair(cases, "capture_sizes_4096_entries",
                {{"model", {{"layers", json::array({small_layer()})}}},
                 {"compilation", {{"capture_sizes", sizes}}},
                 {"scheduler", {{"max_num_batched_tokens", 4096}}}},
                std::nullopt);

  add_plan_pair(cases, "tensor_parallel_1024",
                {{"model", uniform_model(2, 16384, 1024, 64, 4096)},
                 {"parallel", {{"tensor_parallel_size", 1024}}}},
                std::nullopt);
}

void add_names(std::vector<ValidCase>& cases) {
  const std::string name(256, 'n');
  const std::string profile(256, 'p');
  json first = small_layer();
  first["name"] = name;
  first["backend"] = profile;
  json second = small_layer();
  second["name"] = "second";
  second["kv_sharing_target"] = name;
  add_plan_pair(
      cases, "names_of_256_bytes",
      {{"model", {{"name", std::string(256, 'm')}, {"layers", json::array({first, second})}}},
       {"backends", json::array({json{{"name", profile}, {"kernel", "CPU_FLASH"}}})}},
      std::nullopt);

  json utf8 = small_layer();
  utf8["name"] = "слой.0.внимание.日本語";
  add_plan_pair(cases, "utf8_names",
                {{"model", {{"name", "modèle ñ 模型"}, {"layers", json::array({utf8})}}}},
                std::nullopt);

  json nested = small_layer();
  for (int depth = 0; depth < 16; ++depth) {
    nested = {{"repeat", depth < 4 ? 2 : 1}, {"layers", json::array({nested})}};
  }
  add_plan_pair(cases, "repeat_nested_16_deep", {{"model", {{"layers", json::array({nested})}}}},
                std::nullopt);
}

void add_run_edges(std::vector<ValidCase>& cases) {
  const std::vector<std::string> quick = {"--requests", "1", "--compare", "0"};
  const auto run = [&](std::string name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), quick.begin(), quick.end());
    args.insert(args.end(), extra.begin(), extra.end());
    cases.push_back({std::move(name), std::move(args), "", std::nullopt, false});
  };
  run("run_seed_uint64_max",
      {"--seed", "18446744073709551615", "--prompt-len", "1:1", "--output-len", "1:1"});
  // tiny-yoco cut to max_model_len 64: a 40-token prompt and 24 outputs fill it exactly.
  json short_context = json::parse(example_text("tiny-yoco"));
  short_context["model"]["max_model_len"] = 64;
  cases.push_back({"run_prompt_plus_output_equal_max_model_len",
                   {"run", "{CONFIG}", "--requests", "1", "--compare", "0", "--prompt-len", "40:40",
                    "--output-len", "24:24"},
                   short_context.dump(),
                   std::nullopt,
                   false});
  run("run_single_token_ranges", {"--prompt-len", "1", "--output-len", "1"});
  cases.push_back(
      {"run_zero_requests", {"run", "--requests", "0", "--compare", "0"}, "", std::nullopt, false});
  // Llama 3 8B's 2 MiB blocks (32 layers): 2^27 blocks in 256 TiB.
  cases.push_back({"plan_memory_flag_256TiB",
                   {"plan", "{CONFIG}", "--memory", "256TiB", "--json"},
                   example_text("llama-3-8b"),
                   std::int64_t{1} << 27,
                   false});
  cases.push_back({"plan_memory_flag_fraction",
                   {"plan", "--memory", "1.5GiB", "--json"},
                   "",
                   std::nullopt,
                   false});
}

std::vector<ValidCase> valid_cases() {
  std::vector<ValidCase> cases;
  add_large_models(cases);
  add_exact_budgets(cases);
  add_limits(cases);
  add_names(cases);
  add_run_edges(cases);
  return cases;
}

class ExtremeValid : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ExtremeValid, SucceedsAndPrintsAPlan) {
  const ValidCase& c = GetParam();
  HostileCase as_run{
      c.name, c.args, c.config.empty() ? ConfigInput::none : ConfigInput::text, c.config, {}};
  const CaseRun run = run_case(as_run, std::chrono::seconds(120));
  if (c.print_time) {
    std::cout << "[ timing   ] " << c.name << ": attnrt took " << run.result.wall_seconds << " s\n";
    RecordProperty("wall_seconds", std::to_string(run.result.wall_seconds));
  }
  ASSERT_TRUE(!run.result.timed_out && !run.result.signaled && run.result.exit_code == 0)
      << "EXTREME-FAIL " << c.name << ": " << describe_run(run);
  ASSERT_FALSE(run.result.out.empty()) << "EXTREME-FAIL " << c.name << ": no output";
  const bool json_output = std::find(c.args.begin(), c.args.end(), "--json") != c.args.end();
  if (c.args.front() == "plan" && !json_output) {
    EXPECT_EQ(run.result.out.rfind("model ", 0), 0u) << "EXTREME-FAIL " << c.name << ": not a plan";
  }
  if (!json_output) return;
  const json plan = json::parse(run.result.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(plan.is_discarded()) << "EXTREME-FAIL " << c.name << ": --json printed no JSON";
  if (c.num_blocks) {
    EXPECT_EQ(plan.at("kv_cache").at("num_blocks").get<std::int64_t>(), *c.num_blocks)
        << "EXTREME-FAIL " << c.name << ": wrong num_blocks";
  }
}

INSTANTIATE_TEST_SUITE_P(ExtremeValid, ExtremeValid, ::testing::ValuesIn(valid_cases()),
                         [](const ::testing::TestParamInfo<ValidCase>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace attnrt::testing
