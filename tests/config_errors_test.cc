// Malformed configs: each must fail with an Error that starts with the JSON path of the culprit
// and says what is wrong. One row per distinct mistake.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnrt/attention/backend_registry.h"
#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attention_plan.h"

namespace attnrt {
namespace {

struct ErrorCase {
  std::string name;    // test name suffix
  std::string config;  // JSON text
  std::string path;    // the message must start with it
  std::string phrase;  // and contain this
};

// A valid full-attention layer; `extra` fields (JSON object members) are added or replace its own.
std::string full(const std::string& extra = "") {
  nlohmann::json layer = {{"num_heads", 8}, {"num_kv_heads", 2}, {"head_size", 32}};
  layer.merge_patch(nlohmann::json::parse("{" + extra + "}"));
  return layer.dump();
}

std::string sliding(const std::string& extra = "") {
  return full(R"("type": "sliding_window", "sliding_window": 64)" +
              (extra.empty() ? "" : ", " + extra));
}

std::string with_layers(const std::string& layers, const std::string& sections = "") {
  return R"({"model": {"layers": [)" + layers + "]}" + (sections.empty() ? "" : ", " + sections) +
         "}";
}

std::string with_section(const std::string& sections) {
  return with_layers(full(), sections);
}

std::string with_profile(const std::string& profile) {
  return with_section(R"("backends": [)" + profile + "]");
}

const std::string kTarget0 = R"("kv_sharing_target": "model.layers.0.self_attn")";

std::vector<ErrorCase> error_cases() {
  return {
      // Unknown keys, with and without a suggestion.
      {"LayerKeyTypo", with_layers(full(R"("head_sise": 32)")), "model.layers[0].head_sise",
       "unknown key; did you mean \"head_size\"?"},
      {"SectionTypo", with_section(R"("schedular": {})"), "schedular",
       "did you mean \"scheduler\"?"},
      {"UnrelatedCacheKey", with_section(R"("cache": {"colour": 1})"), "cache.colour",
       "unknown key; valid keys here are block_size, dtype, layout, memory"},
      {"KeyTypoInsideRepeat",
       with_layers(R"({"repeat": 2, "layers": [)" + full() + ", " + full(R"("num_kv_head": 2)") +
                   "]}"),
       "model.layers[0].layers[1].num_kv_head", "did you mean \"num_kv_heads\"?"},
      {"RepeatKeyTypo", with_layers(R"({"repat": 2, "layers": [)" + full() + "]}"),
       "model.layers[0].repat", "did you mean \"repeat\"?"},
      {"ProfileKeyTypo", with_profile(R"({"name": "P", "kernel_block_sizes": [{"multiple": 16}]})"),
       "backends[0].kernel_block_sizes[0].multiple", "did you mean \"multiple_of\"?"},
      // Wrong types.
      {"StringForInteger", with_layers(full(R"("num_heads": "8")")), "model.layers[0].num_heads",
       "expected an integer, got a string (\"8\")"},
      {"FractionForInteger", with_section(R"("cache": {"block_size": 16.5})"), "cache.block_size",
       "expected an integer, got a number (16.5)"},
      {"StringForBoolean", with_section(R"("cache": {"kv_sharing_fast_prefill": "yes"})"),
       "cache.kv_sharing_fast_prefill", "expected a boolean"},
      {"ObjectForLayerList", R"({"model": {"layers": {}}})", "model.layers",
       "expected an array, got an object"},
      {"StringForOptionalInteger", with_section(R"("compilation": {"max_capture_size": "big"})"),
       "compilation.max_capture_size", "expected an integer or null"},
      {"TopLevelArray", "[]", "(top level)", "expected an object, got an array"},
      {"TooLargeInteger", with_section(R"("scheduler": {"max_num_seqs": 3000000000})"),
       "scheduler.max_num_seqs", "3000000000 is too large"},
      // The layer list.
      {"MissingLayers", R"({"model": {"name": "x"}})", "model.layers", "missing"},
      {"NoLayers", with_layers(""), "model.layers", "the model has no layers"},
      {"UnknownAttentionType", with_layers(full(R"("type": "sliding")")), "model.layers[0].type",
       "\"sliding\" is not an attention type"},
      {"CapitalisedAttentionType", with_layers(full(R"("type": "Full")")), "model.layers[0].type",
       "\"Full\" is not an attention type; did you mean \"full\"?"},
      {"ZeroRepeat", with_layers(R"({"repeat": 0, "layers": [)" + full() + "]}"),
       "model.layers[0].repeat", "must be a positive integer (got 0)"},
      {"HugeRepeat", with_layers(R"({"repeat": 1000000, "layers": [)" + full() + "]}"),
       "model.layers[0].repeat", "would make more than 100000 layers"},
      {"LayersWithoutRepeat", with_layers(R"({"layers": [)" + full() + "]}"),
       "model.layers[0].repeat", "needs a \"repeat\" count"},
      {"EmptyRepeat", with_layers(R"({"repeat": 2, "layers": []})"), "model.layers[0].layers",
       "needs at least one layer"},
      {"RepetitionIndexOutsideRepeat", with_layers(full(R"("name": "x.{r}")")),
       "model.layers[0].name", "only allowed inside a repeat block"},
      {"UnknownPlaceholder", with_layers(full(R"("name": "x.{j}")")), "model.layers[0].name",
       "unknown placeholder"},
      // Layer fields.
      {"MissingHeads", with_layers(R"({"head_size": 32})"), "model.layers[0].num_heads",
       "must be a positive integer (got 0)"},
      {"HeadsNotMultipleOfKvHeads", with_layers(full(R"("num_kv_heads": 3)")),
       "model.layers[0].num_kv_heads", "num_heads 8 must be a multiple of num_kv_heads 3"},
      {"SlidingWindowMissing", with_layers(full(R"("type": "sliding_window")")),
       "model.layers[0].sliding_window", "required for sliding_window layers"},
      {"SlidingWindowOnFullLayer", with_layers(full(R"("sliding_window": 64)")),
       "model.layers[0].sliding_window",
       "only sliding_window layers take a sliding_window, but this is a full layer"},
      {"ChunkMissing", with_layers(full(R"("type": "chunked_local")")),
       "model.layers[0].attention_chunk_size", "required for chunked_local layers"},
      {"MlaWithoutRank", with_layers(R"({"type": "mla", "num_heads": 16, "head_size": 512})"),
       "model.layers[0].head_size_v", "required for mla layers whose head_size is not 576"},
      {"MlaWithManyKvHeads",
       with_layers(R"({"type": "mla", "num_heads": 16, "num_kv_heads": 16, "head_size": 576})"),
       "model.layers[0].num_kv_heads", "num_kv_heads must be 1 (got 16)"},
      {"MlaRankNotBelowWidth",
       with_layers(R"({"type": "mla", "num_heads": 16, "head_size": 576, "head_size_v": 576})"),
       "model.layers[0].head_size_v", "must be below head_size 576"},
      {"DuplicateNames", with_layers(full(R"("name": "a")") + ", " + full(R"("name": "a")")),
       "model.layers[1].name", "\"a\" is already the name of model.layers[0]"},
      {"HeadsSplitAcrossRanks", with_layers(full(), R"("parallel": {"tensor_parallel_size": 3})"),
       "model.layers[0].num_heads", "8 query heads cannot be split evenly"},
      // KV sharing (SEMANTICS §3.4 messages) and the layer graph.
      {"SharingTargetUnknown",
       with_layers(full() + ", " + full(R"("kv_sharing_target": "model.layers.9")")),
       "model.layers[1].kv_sharing_target",
       "\"model.layers.9\" is not a valid Attention layer in the model"},
      {"SharingItself", with_layers(full(kTarget0)), "model.layers[0].kv_sharing_target",
       "\"model.layers.0.self_attn\" cannot be the same as the current layer"},
      {"SharingLaterLayer",
       with_layers(full(R"("kv_sharing_target": "model.layers.1.self_attn")") + ", " + full()),
       "model.layers[0].kv_sharing_target",
       "\"model.layers.1.self_attn\" must come before the current layer "
       "\"model.layers.0.self_attn\""},
      {"SharingChain",
       with_layers(full() + ", " + full(kTarget0) + ", " +
                   full(R"("kv_sharing_target": "model.layers.1.self_attn")")),
       "model.layers[2].kv_sharing_target",
       "itself shares the KV cache of \"model.layers.0.self_attn\" (chain "
       "\"model.layers.2.self_attn\" -> "
       "\"model.layers.1.self_attn\" -> \"model.layers.0.self_attn\"); point kv_sharing_target at "
       "the owning "
       "layer \"model.layers.0.self_attn\""},
      {"SlidingSharesFull", with_layers(full() + ", " + sliding(kTarget0)),
       "model.layers[1].kv_sharing_target",
       "is a full layer but \"model.layers.1.self_attn\" is a sliding_window layer"},
      {"CrossSharesFull", with_layers(full() + ", " + full(R"("type": "cross", )" + kTarget0)),
       "model.layers[1].kv_sharing_target",
       "may only share the KV cache of a layer of the same attention type"},
      {"SharingDifferentShape",
       with_layers(full() + ", " + full(R"("head_size": 64, )" + kTarget0)),
       "model.layers[1].kv_sharing_target", "the KV shapes must match"},
      {"SharingDifferentWindow",
       with_layers(sliding() + ", " +
                   full(R"("type": "sliding_window", "sliding_window": 128, )" + kTarget0)),
       "model.layers[1].kv_sharing_target", "the window sizes must match"},
      {"EncoderOnlyShares",
       with_layers(full(R"("type": "encoder_only")") + ", " +
                   full(R"("type": "encoder_only", )" + kTarget0)),
       "model.layers[1].kv_sharing_target",
       "encoder_only layer, which has no KV cache, so it cannot share one"},
      {"SharingEncoderOnlyTarget",
       with_layers(full(R"("type": "encoder_only")") + ", " + full(kTarget0)),
       "model.layers[1].kv_sharing_target",
       "is an encoder_only layer and has no KV cache to share"},
      {"DraftBeforeTarget", with_layers(full(R"("draft": true)") + ", " + full()),
       "model.layers[0].draft", "every draft layer must follow every non-draft layer"},
      {"ExpandedIndexInErrors",
       with_layers(R"({"repeat": 2, "layers": [)" + full() + ", " +
                   full(R"("kv_sharing_target": "model.layers.3.self_attn")") + "]}"),
       "model.layers[1].kv_sharing_target",
       "must come before the current layer \"model.layers.1.self_attn\""},
      // Other sections.
      {"ZeroMaxModelLen", R"({"model": {"max_model_len": 0, "layers": [)" + full() + "]}}",
       "model.max_model_len", "must be a positive integer (got 0)"},
      {"BadMemoryString", with_section(R"("cache": {"memory": "lots"})"), "cache.memory",
       "size \"lots\""},
      {"ZeroMemory", with_section(R"("cache": {"memory": 0})"), "cache.memory", "must be positive"},
      {"NegativeMemory", with_section(R"("cache": {"memory": -1})"), "cache.memory",
       "expected a byte count"},
      {"UnknownLayout", with_section(R"("cache": {"layout": "NHD"})"), "cache.layout",
       "\"NHD\" is not a KV cache layout"},
      {"IntegerCacheDtype", with_section(R"("cache": {"dtype": "int32"})"), "cache.dtype",
       "is not a KV cache type"},
      {"UnknownCacheDtype", with_section(R"("cache": {"dtype": "float64"})"), "cache.dtype",
       "float64"},
      {"ZeroBlockSize", with_section(R"("cache": {"block_size": 0})"), "cache.block_size",
       "must be a positive"},
      {"UnknownCudagraphMode",
       with_section(R"("compilation": {"cudagraph_mode": "FULL_PIECEWISE"})"),
       "compilation.cudagraph_mode",
       "\"FULL_PIECEWISE\" is not a CUDA graph mode; did you mean \"FULL_AND_PIECEWISE\"?"},
      {"ZeroCaptureSize", with_section(R"("compilation": {"capture_sizes": [1, 0]})"),
       "compilation.capture_sizes[1]", "must be a positive integer (got 0)"},
      {"ZeroMaxNumSeqs", with_section(R"("scheduler": {"max_num_seqs": 0})"),
       "scheduler.max_num_seqs", "must be a positive integer"},
      {"FewerTokensThanSeqs",
       with_section(R"("scheduler": {"max_num_seqs": 64, "max_num_batched_tokens": 32})"),
       "scheduler.max_num_batched_tokens", "32 is below max_num_seqs 64"},
      {"NegativeSpeculativeTokens",
       with_section(R"("speculative": {"num_speculative_tokens": -1})"),
       "speculative.num_speculative_tokens", "must not be negative"},
      {"ZeroTensorParallel", with_section(R"("parallel": {"tensor_parallel_size": 0})"),
       "parallel.tensor_parallel_size", "must be a positive integer"},
      {"ZeroUbatches", with_section(R"("parallel": {"num_ubatches": 0})"), "parallel.num_ubatches",
       "must be a positive integer"},
      {"NegativeLoraCase", with_section(R"("lora": {"capture_cases": [0, -1]})"),
       "lora.capture_cases[1]", "must not be negative"},
      // Backend profiles.
      {"ProfileWithoutName", with_profile("{}"), "backends[0].name", "required"},
      {"DuplicateProfiles", with_profile(R"({"name": "P"}, {"name": "P"})"), "backends[1].name",
       "declared twice"},
      {"UnknownCgSupport", with_profile(R"({"name": "P", "cudagraph_support": "SOMETIMES"})"),
       "backends[0].cudagraph_support", "is not a CUDA graph support level"},
      {"EmptyKernelBlockSizes", with_profile(R"({"name": "P", "kernel_block_sizes": []})"),
       "backends[0].kernel_block_sizes", "must not be empty"},
      {"ZeroKernelBlockSize",
       with_profile(R"({"name": "P", "kernel_block_sizes": [{"multiple_of": 0}]})"),
       "backends[0].kernel_block_sizes[0].multiple_of", "must be a positive integer"},
      {"UnknownProfileLayout",
       with_profile(R"({"name": "P", "kv_cache_layouts": ["LBHNC", "XYZ"]})"),
       "backends[0].kv_cache_layouts[1]", "\"XYZ\" is not a KV cache layout"},
      {"UnknownSpecKind", with_profile(R"({"name": "P", "spec_kinds": ["sliding"]})"),
       "backends[0].spec_kinds[0]", "\"sliding\" is not an attention type"},
      {"ZeroVarlenBound", with_profile(R"({"name": "P", "varlen_cudagraph_max_query_len": 0})"),
       "backends[0].varlen_cudagraph_max_query_len", "must be a positive integer"},
  };
}

class ConfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigErrorTest, NamesThePathAndTheProblem) {
  const ErrorCase& bad = GetParam();
  const nlohmann::json json = nlohmann::json::parse(bad.config);
  try {
    load_config_json(json);
    FAIL() << "accepted: " << bad.config;
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(bad.path + ":", 0), 0u) << message;
    EXPECT_NE(message.find(bad.phrase), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ConfigErrorTest, ::testing::ValuesIn(error_cases()),
                         [](const ::testing::TestParamInfo<ErrorCase>& param_info) {
                           return param_info.param.name;
                         });

// Backend names belong to the registry (built-in backends and profiles), which resolves them when
// the config is planned; the message still starts with the name's JSON path.
TEST(ConfigErrors, UnknownBackendsAreNamedByTheirPathWhenPlanned) {
  const ErrorCase cases[] = {
      {"UnknownBackend", with_layers(full(R"("backend": "FLASH")")), "model.layers[0].backend",
       "unknown attention backend \"FLASH\""},
      {"MisspeltBackend", with_layers(full(R"("backend": "CPU_FLAHS")")), "model.layers[0].backend",
       "did you mean \"CPU_FLASH\"?"},
      // Once listed as built in, although no such backend was ever registered.
      {"CudaPagedIsNoBackend", with_layers(full(R"("backend": "CUDA_PAGED")")),
       "model.layers[0].backend", "unknown attention backend \"CUDA_PAGED\""},
      {"UnknownKernel", with_profile(R"({"name": "P", "kernel": "CUDA"})"), "backends[0].kernel",
       "names kernel \"CUDA\", which is not an executable built-in backend"},
  };
  for (const ErrorCase& bad : cases) {
    const EngineConfig config = load_config_json(nlohmann::json::parse(bad.config));
    try {
      plan_attention(config, make_backend_registry(config, builtin_backends()));
      ADD_FAILURE() << bad.name << " planned";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind(bad.path + ":", 0), 0u) << bad.name << ": " << message;
      EXPECT_NE(message.find(bad.phrase), std::string::npos) << bad.name << ": " << message;
    }
  }
}

TEST(ConfigErrors, TableHasDistinctInputs) {
  const std::vector<ErrorCase> cases = error_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (std::size_t j = i + 1; j < cases.size(); ++j) {
      EXPECT_NE(cases[i].config, cases[j].config) << cases[i].name;
    }
  }
  EXPECT_GE(cases.size(), 25u);
}

}  // namespace
}  // namespace attnrt
