#include "engine_arg_options.h"

#include <array>

#include "attnrt/config/config_limits.h"
#include "attnrt/config/config_loader.h"
#include "cli_checks.h"
#include "core/fail.h"

namespace attnrt::cli {
namespace {

// "all" is in vLLM's list; validate_config refuses it with the reason.
constexpr std::array<std::string_view, 3> kMambaCacheModes = {"none", "align", "all"};
constexpr std::array<std::string_view, 6> kCacheDtypes = {"auto",    "bfloat16", "float16",
                                                          "float32", "fp8",      "fp8_e4m3"};

}  // namespace

std::vector<std::string> expand_vllm_aliases(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& arg : args) {
    if (arg == "-tp") {
      arg = "--tensor-parallel-size";
    } else if (arg.starts_with("-tp=")) {
      arg = "--tensor-parallel-size=" + arg.substr(4);
    }
  }
  return args;
}

void add_engine_arg_options(CLI::App& command, EngineArgOptions& options) {
  command
      .add_option("--max-model-len", options.max_model_len,
                  "Tokens per request (default: the config's; an HF config's may only shrink)")
      ->check(integer_in(1, limits::kMaxModelLen));
  command
      .add_option("--tensor-parallel-size", options.tensor_parallel_size,
                  "Tensor-parallel ranks (-tp); the plan is per rank (default: the config's)")
      ->check(integer_in(1, limits::kMaxTensorParallel));
  command.add_option("--block-size", options.block_size, "Tokens per KV cache block (default 16)")
      ->check(integer_in(1, limits::kMaxBlockSize));
  command
      .add_option("--kv-cache-dtype", options.kv_cache_dtype,
                  "KV cache dtype: auto (the model's), bfloat16, float16, float32, fp8")
      ->check(one_of(kCacheDtypes, "a KV cache dtype"));
  command
      .add_option("--num-gpu-blocks-override", options.num_gpu_blocks_override,
                  "Plan exactly this many KV cache blocks, whatever the memory holds")
      ->check(integer_in(1, limits::kMaxNumBlocks));
  command.add_flag("--kv-sharing-fast-prefill", options.kv_sharing_fast_prefill,
                   "Let trailing KV-sharing layers skip prefill rows that produce no logits");
  CLI::Option* prefix_on = command.add_flag(
      "--enable-prefix-caching", options.enable_prefix_caching,
      "vLLM's prefix caching: hybrids keep two state blocks per request (\"align\") (default: "
      "on for hybrid Hugging Face models, as in the newest vLLM)");
  command
      .add_flag("--no-enable-prefix-caching", options.no_enable_prefix_caching,
                "Without prefix caching: one state block per request (\"none\")")
      ->excludes(prefix_on);
  command
      .add_option("--mamba-cache-mode", options.mamba_cache_mode,
                  "State blocks per request of a hybrid: none, align (with prefix caching)")
      ->check(one_of(kMambaCacheModes, "a Mamba cache mode"));
  command
      .add_option("--max-num-seqs", options.max_num_seqs,
                  "Requests the scheduler runs at once (default: the config's; 256 for HF)")
      ->check(integer_in(1, limits::kMaxNumSeqs));
  command
      .add_option("--max-num-batched-tokens", options.max_num_batched_tokens,
                  "Tokens per scheduler step (default: the config's; 8192 for HF)")
      ->check(integer_in(1, limits::kMaxBatchedTokens));
  command.add_option("--memory", options.memory, "KV cache memory per rank, e.g. 24GiB")
      ->check(non_empty());
  command
      .add_option("--device-memory", options.device_memory,
                  "Memory of one device, e.g. 80GB: the KV budget becomes device x "
                  "utilization - weights - reserve (Hugging Face configs)")
      ->check(non_empty());
  command
      .add_option("--gpu-memory-utilization", options.gpu_memory_utilization,
                  "Fraction of --device-memory vLLM may use (default 0.9)")
      ->check(number_in(0.0, 1.0));
  command
      .add_option("--reserve", options.reserve,
                  "Activations and CUDA graphs, taken from --device-memory (default 2GiB)")
      ->check(non_empty());
}

EngineArgs to_engine_args(const EngineArgOptions& options) {
  EngineArgs args;
  args.max_model_len = options.max_model_len;
  args.tensor_parallel_size = options.tensor_parallel_size;
  args.block_size = options.block_size;
  args.kv_cache_dtype = options.kv_cache_dtype;
  args.num_gpu_blocks_override = options.num_gpu_blocks_override;
  if (options.kv_sharing_fast_prefill) args.kv_sharing_fast_prefill = true;
  if (options.enable_prefix_caching) args.enable_prefix_caching = true;
  if (options.no_enable_prefix_caching) args.enable_prefix_caching = false;
  args.mamba_cache_mode = options.mamba_cache_mode;
  args.max_num_seqs = options.max_num_seqs;
  args.max_num_batched_tokens = options.max_num_batched_tokens;
  if (!options.memory.empty()) {
    try {
      args.memory = parse_size(options.memory);
    } catch (const Error& error) {
      fail("--memory: {}", error.what());
    }
  }
  return args;
}

namespace {

std::uint64_t size_of(std::string_view option, const std::string& text) {
  try {
    return parse_size(text);
  } catch (const Error& error) {
    fail("{}: {}", option, error.what());
  }
}

}  // namespace

std::optional<DeviceBudget> apply_device_budget(LoadedModel& model,
                                                const EngineArgOptions& options) {
  if (options.device_memory.empty()) {
    if (options.gpu_memory_utilization || !options.reserve.empty()) {
      fail("{}: only counts with --device-memory; give the device's memory too",
           options.gpu_memory_utilization ? "--gpu-memory-utilization" : "--reserve");
    }
    return std::nullopt;
  }
  if (!options.memory.empty()) {
    fail("--device-memory: --memory gives the KV cache budget already; use one of the two");
  }
  if (!model.hf_json) {
    fail(
        "--device-memory: the weights are counted from a Hugging Face config.json, and {} is "
        "an attnrt config; give its KV budget with --memory",
        model.source);
  }
  DeviceBudgetRequest request;
  request.device_memory = size_of("--device-memory", options.device_memory);
  request.gpu_memory_utilization = options.gpu_memory_utilization.value_or(0.9);
  if (!options.reserve.empty()) request.reserve = size_of("--reserve", options.reserve);
  DeviceBudget budget = device_kv_budget(
      request,
      estimate_hf_weight_bytes(*model.hf_json, model.config.parallel.tensor_parallel_size));
  EngineArgs memory;
  memory.memory = budget.kv_cache_bytes;
  apply_engine_args(model.config, memory, model.hf->model_dtype);
  return budget;
}

}  // namespace attnrt::cli
