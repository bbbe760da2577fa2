// The documented ranges (docs/config.md "Limits") and the strict JSON rules: each value just past
// its bound is refused naming its JSON path, each value at its bound is accepted, and the rules
// plain JSON leaves open (duplicate keys, nesting, numbers beyond a double) are errors.

#include "attnrt/config/config_limits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "attnrt/config/config_loader.h"
#include "error_of.h"

namespace attnrt {
namespace {

using nlohmann::json;
using testing::error_of;

json base_config() {
  // num_kv_heads follows num_heads, so each head count may go to its bound alone.
  return json::parse(R"({"model": {"layers": [{"num_heads": 8, "head_size": 64}]}})");
}

// The error of loading base_config() with `pointer` set to `value` ("(no error)" if it loads).
std::string error_with(const std::string& pointer, const json& value) {
  json config = base_config();
  config[json::json_pointer(pointer)] = value;
  return error_of([&] { load_config_text(config.dump(), "test.json"); });
}

struct Bound {
  std::string pointer;  // JSON pointer of the value
  std::string path;     // the JSON path the message must start with
  std::int64_t low;
  std::int64_t high;
};

class RangeTest : public ::testing::TestWithParam<Bound> {};

TEST_P(RangeTest, RefusesJustPastEachBoundAndAcceptsTheBounds) {
  const Bound& bound = GetParam();
  const std::string below = error_with(bound.pointer, bound.low - 1);
  const std::string above = error_with(bound.pointer, bound.high + 1);
  EXPECT_EQ(below.rfind(bound.path + ": ", 0), 0u) << below;
  EXPECT_EQ(above.rfind(bound.path + ": ", 0), 0u) << above;
  EXPECT_NE(above.find(std::to_string(bound.high)), std::string::npos) << above;
  EXPECT_EQ(error_with(bound.pointer, bound.low), "(no error)");
}

INSTANTIATE_TEST_SUITE_P(
    Config, RangeTest,
    ::testing::Values(
        Bound{"/model/max_model_len", "model.max_model_len", 1, limits::kMaxModelLen},
        Bound{"/model/max_encoder_len", "model.max_encoder_len", 1, limits::kMaxModelLen},
        Bound{"/model/hidden_size", "model.hidden_size", 0, limits::kMaxHiddenSize},
        Bound{"/model/vocab_size", "model.vocab_size", 0, limits::kMaxVocabSize},
        Bound{"/model/layers/0/num_heads", "model.layers[0].num_heads", 1, limits::kMaxHeads},
        Bound{"/model/layers/0/head_size", "model.layers[0].head_size", 1, limits::kMaxHeadSize},
        Bound{"/cache/block_size", "cache.block_size", 1, limits::kMaxBlockSize},
        Bound{"/scheduler/max_num_seqs", "scheduler.max_num_seqs", 1, limits::kMaxNumSeqs},
        Bound{"/speculative/num_speculative_tokens", "speculative.num_speculative_tokens", 0,
              limits::kMaxSpeculativeTokens},
        Bound{"/parallel/num_ubatches", "parallel.num_ubatches", 1, limits::kMaxUbatches},
        Bound{"/compilation/max_capture_size", "compilation.max_capture_size", 1,
              limits::kMaxBatchedTokens},
        Bound{"/compilation/capture_sizes/0", "compilation.capture_sizes[0]", 1,
              limits::kMaxBatchedTokens},
        Bound{"/lora/capture_cases/0", "lora.capture_cases[0]", 0, limits::kMaxLoRACases}),
    [](const auto& param_info) {
      std::string name = param_info.param.path;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(ConfigLimitsTest, LimitsThatNeedTheirNeighbours) {
  // max_num_batched_tokens must also cover max_num_seqs, and the tensor-parallel size divide the
  // heads: their upper bounds are checked with neighbours that allow them.
  json config = base_config();
  config["scheduler"] = {{"max_num_seqs", 1},
                         {"max_num_batched_tokens", limits::kMaxBatchedTokens}};
  EXPECT_EQ(error_of([&] { load_config_json(config); }), "(no error)");
  config["scheduler"]["max_num_batched_tokens"] = limits::kMaxBatchedTokens + 1;
  EXPECT_NE(error_of([&] { load_config_json(config); }).find("scheduler.max_num_batched_tokens: "),
            std::string::npos);
  EXPECT_NE(error_with("/parallel/tensor_parallel_size", limits::kMaxTensorParallel + 1)
                .find("parallel.tensor_parallel_size: 1025 is too large"),
            std::string::npos);
  EXPECT_NE(error_with("/cache/memory", std::uint64_t{1} << 49).find("cache.memory: "),
            std::string::npos);
  EXPECT_EQ(error_with("/cache/memory", limits::kMaxMemory), "(no error)");
}

TEST(ConfigLimitsTest, DuplicateKeysAreNamed) {
  const std::string text =
      R"({"model": {"layers": [{"num_heads": 8, "head_size": 64, "num_heads": 4}]}})";
  EXPECT_EQ(error_of([&] { load_config_text(text, "dup.json"); }),
            "model.layers[0].num_heads: duplicate key; each key may appear once per object (JSON "
            "would keep only the last) (in dup.json)");
}

TEST(ConfigLimitsTest, NumbersBeyondADoubleNameTheirPath) {
  const std::string text = R"({"model": {"max_model_len": 1e400, "layers": []}})";
  EXPECT_EQ(error_of([&] {
              load_config_text(text, "big.json");
            }).rfind("model.max_model_len: the number 1e400 is out of range", 0),
            0u);
}

TEST(ConfigLimitsTest, DeepNestingIsRefusedWithoutRecursion) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string message = error_of([&] { load_config_text(deep, "deep.json"); });
  EXPECT_NE(message.find("nest more than 64 levels deep"), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u);
}

TEST(ConfigLimitsTest, RepeatBlocksNestAtMostSixteenDeep) {
  json layers = json::array({{{"num_heads", 8}, {"head_size", 64}}});
  for (int depth = 0; depth < limits::kMaxRepeatNesting; ++depth) {
    layers = json::array({{{"repeat", 1}, {"layers", layers}}});
  }
  json config = {{"model", {{"layers", layers}}}};
  EXPECT_EQ(error_of([&] { load_config_json(config); }), "(no error)");
  config["model"]["layers"] = json::array({{{"repeat", 1}, {"layers", layers}}});
  EXPECT_NE(error_of([&] { load_config_json(config); }).find("repeat blocks nest more than 16"),
            std::string::npos);
}

TEST(ConfigLimitsTest, NamesAreOneLineOfPrintableText) {
  const std::string message = error_with("/model/layers/0/name", "evil\nattnrt: forged");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("model.layers[0].name: \"evil\\nattnrt: forged\" contains the control"),
            std::string::npos)
      << message;
  EXPECT_NE(error_with("/model/name", "bell\x07").find("model.name: "), std::string::npos);
  EXPECT_NE(error_with("/model/layers/0/name", std::string(300, 'x')).find("too long for a name"),
            std::string::npos);
  EXPECT_EQ(error_with("/model/layers/0/name", "Überschicht.0"), "(no error)");  // UTF-8 is fine

  // Configs built in code go through validate_config: invalid UTF-8 is refused there too.
  EngineConfig config = load_config_json(base_config());
  config.model.layers[0].name = "bad\xff";
  EXPECT_NE(error_of([&] { validate_config(config); }).find("is not valid UTF-8"),
            std::string::npos);
}

TEST(ConfigLimitsTest, ProfilesMustReadTheCacheLayoutAndBoundOnlyGraphs) {
  json config = base_config();
  config["backends"] = json::parse(
      R"([{"name": "P", "cudagraph_support": "ALWAYS", "kv_cache_layouts": ["BLHNC"]}])");
  config["model"]["layers"][0]["backend"] = "P";
  EXPECT_NE(error_of([&] {
              load_config_json(config);
            }).rfind("backends[0].kv_cache_layouts: profile \"P\"", 0),
            std::string::npos);
  config["cache"] = {{"layout", "BLHNC"}};
  EXPECT_EQ(error_of([&] { load_config_json(config); }), "(no error)");

  config["backends"][0]["cudagraph_support"] = "NEVER";
  config["backends"][0]["varlen_cudagraph_max_query_len"] = 4;
  EXPECT_EQ(error_of([&] {
              load_config_json(config);
            }).rfind("backends[0].varlen_cudagraph_max_query_len: ", 0),
            0u);
}

class ConfigFileTest : public ::testing::Test {
 protected:
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() /
                               ("attnrt_config_file_test_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

TEST_F(ConfigFileTest, PathsThatAreNoConfigFileSaySo) {
  EXPECT_NE(error_of([&] { load_config_file(dir_.string()); }).find(": is a directory"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_config_file("/dev/zero"); }).find("is not a regular file"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_config_file((dir_ / "missing.json").string());
            }).find("cannot open the config file (No such file or directory)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_config_file(""); }).find("the config path is empty"),
            std::string::npos);

  const std::filesystem::path huge = dir_ / "huge.json";
  std::ofstream(huge) << std::string(limits::kMaxConfigBytes + 1, ' ');
  EXPECT_NE(error_of([&] { load_config_file(huge.string()); }).find("larger than 64 MiB"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { load_config_file((huge / "child").string()); }).find("(Not a directory)"),
      std::string::npos);
}

}  // namespace
}  // namespace attnrt
