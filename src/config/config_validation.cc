// validate_config: the invariants of every section; the loader runs it after reading the JSON.

#include <algorithm>
#include <map>
#include <set>

#include "attnrt/config/config_limits.h"
#include "attnrt/config/config_loader.h"
#include "config_names.h"
#include "core/fail.h"
#include "layer_validation.h"
#include "range_checks.h"

namespace attnrt {
namespace {

using detail::require_range;

void validate_model(const ModelConfig& model) {
  detail::require_name_text(model.name, "model.name");
  require_range(model.max_model_len, 1, limits::kMaxModelLen, "model.max_model_len");
  require_range(model.max_encoder_len, 1, limits::kMaxModelLen, "model.max_encoder_len");
  require_range(model.hidden_size, 0, limits::kMaxHiddenSize, "model.hidden_size");
  require_range(model.vocab_size, 0, limits::kMaxVocabSize, "model.vocab_size");
}

void validate_cache(const CacheConfig& cache) {
  require_range(cache.block_size, 1, limits::kMaxBlockSize, "cache.block_size");
  if (cache.memory == 0) {
    fail("cache.memory: must be positive (a byte count or a size such as \"4GiB\")");
  }
  if (cache.memory > limits::kMaxMemory) {
    fail("cache.memory: {} bytes is too large (at most {} bytes, 256 TiB)", cache.memory,
         limits::kMaxMemory);
  }
  if (cache.num_gpu_blocks_override) {
    require_range(*cache.num_gpu_blocks_override, 1, limits::kMaxNumBlocks,
                  "cache.num_gpu_blocks_override");
  }
  if (!is_floating(cache.dtype)) {
    fail("cache.dtype: {} is not a KV cache type; use auto, float32, float16, bfloat16 or fp8_e4m3",
         dtype_name(cache.dtype));
  }
  if (cache.mamba_cache_mode == MambaCacheMode::all) {
    fail(
        "cache.mamba_cache_mode: \"all\" (a state block per attention block, aligned to the "
        "model's Mamba chunk size) is not planned by attnrt; use \"align\" or \"none\"");
  }
}

void validate_compilation(const CompilationConfig& compilation) {
  const std::vector<int>& sizes = compilation.capture_sizes;
  if (sizes.size() > limits::kMaxCaptureSizes) {
    fail("compilation.capture_sizes: {} entries is too many (at most {})", sizes.size(),
         limits::kMaxCaptureSizes);
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    require_range(sizes[i], 1, limits::kMaxBatchedTokens,
                  fmt::format("compilation.capture_sizes[{}]", i));
  }
  if (compilation.max_capture_size) {
    require_range(*compilation.max_capture_size, 1, limits::kMaxBatchedTokens,
                  "compilation.max_capture_size");
  }
}

void validate_engine_limits(const EngineConfig& config) {
  const SchedulerConfig& scheduler = config.scheduler;
  require_range(scheduler.max_num_seqs, 1, limits::kMaxNumSeqs, "scheduler.max_num_seqs");
  require_range(scheduler.max_num_batched_tokens, 1, limits::kMaxBatchedTokens,
                "scheduler.max_num_batched_tokens");
  if (scheduler.max_num_batched_tokens < scheduler.max_num_seqs) {
    fail(
        "scheduler.max_num_batched_tokens: {} is below max_num_seqs {}; every running sequence "
        "needs at least one token per step",
        scheduler.max_num_batched_tokens, scheduler.max_num_seqs);
  }
  require_range(config.speculative.num_speculative_tokens, 0, limits::kMaxSpeculativeTokens,
                "speculative.num_speculative_tokens");
  require_range(config.parallel.num_ubatches, 1, limits::kMaxUbatches, "parallel.num_ubatches");
  require_range(config.parallel.tensor_parallel_size, 1, limits::kMaxTensorParallel,
                "parallel.tensor_parallel_size");
  const std::vector<int>& cases = config.lora.capture_cases;
  if (cases.size() > limits::kMaxLoRACaseCount) {
    fail("lora.capture_cases: {} entries is too many (at most {})", cases.size(),
         limits::kMaxLoRACaseCount);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    require_range(cases[i], 0, limits::kMaxLoRACases, fmt::format("lora.capture_cases[{}]", i));
  }
}

void validate_profile(const BackendProfileConfig& profile, const std::string& path) {
  if (profile.name.empty()) {
    fail("{}.name: required; name the profile so layers can refer to it", path);
  }
  detail::require_name_text(profile.name, path + ".name");
  detail::require_name_text(profile.kernel, path + ".kernel");  // resolved by the registry
  if (profile.varlen_cudagraph_max_query_len) {
    require_range(*profile.varlen_cudagraph_max_query_len, 1, limits::kMaxBatchedTokens,
                  path + ".varlen_cudagraph_max_query_len");
    if (profile.cudagraph_support == AttentionCGSupport::NEVER) {
      fail(
          "{}.varlen_cudagraph_max_query_len: bounds the batches a CUDA graph may capture, but "
          "cudagraph_support is NEVER; remove it or raise cudagraph_support",
          path);
    }
  }
  if (profile.kernel_block_sizes.empty()) {
    fail(
        "{}.kernel_block_sizes: must not be empty; use [{{\"multiple_of\": 1}}] to accept any size",
        path);
  }
  for (std::size_t i = 0; i < profile.kernel_block_sizes.size(); ++i) {
    const KernelBlockSizeEntry& entry = profile.kernel_block_sizes[i];
    require_range(entry.value, 1, limits::kMaxBlockSize,
                  fmt::format("{}.kernel_block_sizes[{}]{}", path, i,
                              entry.multiple_of ? ".multiple_of" : ""));
  }
}

void validate_backends(const std::vector<BackendProfileConfig>& backends) {
  if (backends.size() > limits::kMaxBackendProfiles) {
    fail("backends: {} profiles is too many (at most {})", backends.size(),
         limits::kMaxBackendProfiles);
  }
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    const std::string path = fmt::format("backends[{}]", i);
    validate_profile(backends[i], path);
    if (!names.insert(backends[i].name).second) {
      fail("{}.name: \"{}\" is declared twice; profile names must be unique", path,
           backends[i].name);
    }
  }
}

// A profile that lists its KV cache layouts cannot read a cache laid out otherwise.
void validate_profile_layouts(const EngineConfig& config) {
  std::map<std::string_view, std::size_t> profile_index;
  for (std::size_t i = 0; i < config.backends.size(); ++i) {
    profile_index.emplace(config.backends[i].name, i);
  }
  const std::vector<LayerConfig>& layers = config.model.layers;
  for (std::size_t layer = 0; layer < layers.size(); ++layer) {
    const auto found = profile_index.find(layers[layer].backend);
    if (found == profile_index.end()) continue;
    const BackendProfileConfig& profile = config.backends[found->second];
    const std::vector<KVCacheLayout>& layouts = profile.kv_cache_layouts;
    if (layouts.empty() ||
        std::find(layouts.begin(), layouts.end(), config.cache.layout) != layouts.end()) {
      continue;
    }
    fail(
        "backends[{}].kv_cache_layouts: profile \"{}\" (the backend of model.layers[{}]) reads "
        "only {}, but cache.layout is {}; add it or change cache.layout",
        found->second, profile.name, layer, layout_names(layouts),
        layout_name(config.cache.layout));
  }
}

}  // namespace

void validate_config(const EngineConfig& config) {
  validate_model(config.model);
  validate_cache(config.cache);
  validate_compilation(config.compilation);
  validate_engine_limits(config);
  validate_backends(config.backends);
  detail::validate_layers(config);  // after the profiles: layer backends may name them
  validate_profile_layouts(config);
}

}  // namespace attnrt
