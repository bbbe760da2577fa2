#pragma once
// vLLM's engine arguments on `plan` and `run`, spelled as vLLM spells them, plus `--memory`
// (KV cache bytes per rank: what vLLM logs as available KV cache memory).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "attnrt/config/device_budget.h"
#include "attnrt/config/engine_args.h"
#include "attnrt/config/model_source.h"

namespace attnrt::cli {

struct EngineArgOptions {
  std::optional<int> max_model_len;
  std::optional<int> tensor_parallel_size;
  std::optional<int> block_size;
  std::optional<std::string> kv_cache_dtype;
  std::optional<std::int64_t> num_gpu_blocks_override;
  bool kv_sharing_fast_prefill = false;
  bool enable_prefix_caching = false;  // neither flag: the model's default
  bool no_enable_prefix_caching = false;
  std::optional<std::string> mamba_cache_mode;
  std::optional<int> max_num_seqs;
  std::optional<int> max_num_batched_tokens;
  std::string memory;
  std::string device_memory;  // whole-device budget: device x utilization - weights - reserve
  std::optional<double> gpu_memory_utilization;
  std::string reserve;
};

// vLLM's `-tp N` (one dash, two letters, which CLI11 cannot declare) as `--tensor-parallel-size N`;
// every other argument unchanged.
std::vector<std::string> expand_vllm_aliases(int argc, char** argv);

void add_engine_arg_options(CLI::App& command, EngineArgOptions& options);

// The arguments given; throws Error naming `--memory` for a bad size.
EngineArgs to_engine_args(const EngineArgOptions& options);

// With --device-memory: the KV budget of the whole device, from the weights the Hugging Face
// config implies on one rank, set as the model's cache memory. nullopt without --device-memory.
std::optional<DeviceBudget> apply_device_budget(LoadedModel& model,
                                                const EngineArgOptions& options);

}  // namespace attnrt::cli
