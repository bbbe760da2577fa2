// validate_config: the invariants of every section; the loader runs it after reading the JSON.

#include <set>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "config_names.h"
#include "layer_validation.h"

namespace attnrt {
namespace {

using detail::contains_name;
using detail::join_names;

void require_positive(std::int64_t value, std::string_view path) {
  if (value <= 0) fail("{}: must be a positive integer (got {})", path, value);
}

void require_name(std::string_view value, std::string_view path, std::string_view what,
                  std::span<const std::string_view> names) {
  if (!contains_name(names, value)) {
    fail("{}: {}", path, detail::unknown_name_message(value, what, names));
  }
}

void validate_model(const ModelConfig& model) {
  require_positive(model.max_model_len, "model.max_model_len");
  require_positive(model.max_encoder_len, "model.max_encoder_len");
  if (model.hidden_size < 0) {
    fail("model.hidden_size: must not be negative (got {})", model.hidden_size);
  }
  if (model.vocab_size < 0) {
    fail("model.vocab_size: must not be negative (got {})", model.vocab_size);
  }
}

void validate_cache(const CacheConfig& cache) {
  require_positive(cache.block_size, "cache.block_size");
  require_name(cache.layout, "cache.layout", "a KV cache layout", detail::kKVCacheLayoutNames);
  if (cache.memory == 0) {
    fail("cache.memory: must be positive (a byte count or a size such as \"4GiB\")");
  }
  if (!is_floating(cache.dtype)) {
    fail("cache.dtype: {} is not a KV cache type; use auto, float32, float16, bfloat16 or fp8_e4m3",
         dtype_name(cache.dtype));
  }
}

void validate_compilation(const CompilationConfig& compilation) {
  require_name(compilation.cudagraph_mode, "compilation.cudagraph_mode", "a CUDA graph mode",
               detail::kCUDAGraphModeNames);
  for (std::size_t i = 0; i < compilation.capture_sizes.size(); ++i) {
    require_positive(compilation.capture_sizes[i], fmt::format("compilation.capture_sizes[{}]", i));
  }
  if (compilation.max_capture_size) {
    require_positive(*compilation.max_capture_size, "compilation.max_capture_size");
  }
}

void validate_engine_limits(const EngineConfig& config) {
  const SchedulerConfig& scheduler = config.scheduler;
  require_positive(scheduler.max_num_seqs, "scheduler.max_num_seqs");
  require_positive(scheduler.max_num_batched_tokens, "scheduler.max_num_batched_tokens");
  if (scheduler.max_num_batched_tokens < scheduler.max_num_seqs) {
    fail(
        "scheduler.max_num_batched_tokens: {} is below max_num_seqs {}; every running sequence "
        "needs at least one token per step",
        scheduler.max_num_batched_tokens, scheduler.max_num_seqs);
  }
  if (config.speculative.num_speculative_tokens < 0) {
    fail("speculative.num_speculative_tokens: must not be negative (got {})",
         config.speculative.num_speculative_tokens);
  }
  require_positive(config.parallel.num_ubatches, "parallel.num_ubatches");
  require_positive(config.parallel.tensor_parallel_size, "parallel.tensor_parallel_size");
  const std::vector<int>& cases = config.lora.capture_cases;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i] < 0) fail("lora.capture_cases[{}]: must not be negative (got {})", i, cases[i]);
  }
}

void validate_profile(const BackendProfileConfig& profile, const std::string& path) {
  if (profile.name.empty()) {
    fail("{}.name: required; name the profile so layers can refer to it", path);
  }
  if (!profile.kernel.empty()) {
    require_name(profile.kernel, path + ".kernel", "a built-in backend",
                 detail::kBuiltinBackendNames);
  }
  require_name(profile.cudagraph_support, path + ".cudagraph_support", "a CUDA graph support level",
               detail::kCGSupportNames);
  if (profile.varlen_cudagraph_max_query_len) {
    require_positive(*profile.varlen_cudagraph_max_query_len,
                     path + ".varlen_cudagraph_max_query_len");
  }
  if (profile.kernel_block_sizes.empty()) {
    fail(
        "{}.kernel_block_sizes: must not be empty; use [{{\"multiple_of\": 1}}] to accept any size",
        path);
  }
  for (std::size_t i = 0; i < profile.kernel_block_sizes.size(); ++i) {
    require_positive(profile.kernel_block_sizes[i].value,
                     fmt::format("{}.kernel_block_sizes[{}]", path, i));
  }
  for (std::size_t i = 0; i < profile.kv_cache_layouts.size(); ++i) {
    require_name(profile.kv_cache_layouts[i], fmt::format("{}.kv_cache_layouts[{}]", path, i),
                 "a KV cache layout", detail::kKVCacheLayoutNames);
  }
  for (std::size_t i = 0; i < profile.spec_kinds.size(); ++i) {
    require_name(profile.spec_kinds[i], fmt::format("{}.spec_kinds[{}]", path, i),
                 "an attention type", detail::kAttentionTypeNames);
  }
}

void validate_backends(const std::vector<BackendProfileConfig>& backends) {
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

}  // namespace

void validate_config(const EngineConfig& config) {
  validate_model(config.model);
  validate_cache(config.cache);
  validate_compilation(config.compilation);
  validate_engine_limits(config);
  validate_backends(config.backends);
  detail::validate_layers(config);  // last: layer backends may name the profiles checked above
}

}  // namespace attnrt
