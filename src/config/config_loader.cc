#include "attnrt/config/config_loader.h"

#include <nlohmann/json.hpp>

#include "attnrt/core/printable.h"
#include "config_file.h"
#include "core/fail.h"
#include "json_reader.h"
#include "json_text.h"
#include "layer_expansion.h"

namespace attnrt {
namespace {

using detail::json;
using detail::ObjectReader;

void read_model(const json& value, ModelConfig& model) {
  ObjectReader reader(value, "model");
  reader.read("name", model.name);
  reader.read("max_model_len", model.max_model_len);
  reader.read("hidden_size", model.hidden_size);
  reader.read("vocab_size", model.vocab_size);
  reader.read("max_encoder_len", model.max_encoder_len);
  const json* layers = reader.field("layers");
  reader.reject_unknown_keys();
  if (layers == nullptr) fail("model.layers: missing; list the model's attention layers");
  model.layers = detail::expand_layers(*layers, "model.layers");
}

DType read_cache_dtype(const json& value, const std::string& path) {
  const std::string name = detail::read_string(value, path);
  if (name == "auto") return DType::bf16;  // attnrt's models run in bf16
  try {
    return parse_dtype(name);
  } catch (const Error& error) {
    fail("{}: {}", path, error.what());
  }
}

std::uint64_t read_memory(const json& value, const std::string& path) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (!value.is_string()) {
    fail("{}: expected a byte count or a size string such as \"4GiB\", got {}", path,
         detail::describe_json(value));
  }
  try {
    return parse_size(value.get<std::string>());
  } catch (const Error& error) {
    fail("{}: {}", path, error.what());
  }
}

void read_cache(const json& value, CacheConfig& cache) {
  ObjectReader reader(value, "cache");
  reader.read("block_size", cache.block_size);
  if (const json* dtype = reader.field("dtype")) {
    cache.dtype = read_cache_dtype(*dtype, reader.path_of("dtype"));
  }
  reader.read_choice("layout", cache.layout, "a KV cache layout", kKVCacheLayoutNames, kAllLayouts);
  if (const json* memory = reader.field("memory")) {
    cache.memory = read_memory(*memory, reader.path_of("memory"));
  }
  reader.read("kv_sharing_fast_prefill", cache.kv_sharing_fast_prefill);
  reader.read("enable_prefix_caching", cache.enable_prefix_caching);
  reader.read_choice("mamba_cache_mode", cache.mamba_cache_mode, "a Mamba cache mode",
                     kMambaCacheModeNames, kAllMambaCacheModes);
  if (const json* blocks = reader.field("num_gpu_blocks_override"); blocks && !blocks->is_null()) {
    cache.num_gpu_blocks_override =
        detail::read_int(*blocks, reader.path_of("num_gpu_blocks_override"));
  }
  reader.reject_unknown_keys();
}

void read_compilation(const json& value, CompilationConfig& compilation) {
  ObjectReader reader(value, "compilation");
  reader.read_choice("cudagraph_mode", compilation.cudagraph_mode, "a CUDA graph mode",
                     kCUDAGraphModeNames, CUDAGraphMode::all());
  reader.read("capture_sizes", compilation.capture_sizes);
  reader.read("max_capture_size", compilation.max_capture_size);
  reader.read("attention_split_piecewise", compilation.attention_split_piecewise);
  reader.reject_unknown_keys();
}

void read_scheduler(const json& value, SchedulerConfig& scheduler) {
  ObjectReader reader(value, "scheduler");
  reader.read("max_num_seqs", scheduler.max_num_seqs);
  reader.read("max_num_batched_tokens", scheduler.max_num_batched_tokens);
  reader.reject_unknown_keys();
}

void read_speculative(const json& value, SpeculativeConfig& speculative) {
  ObjectReader reader(value, "speculative");
  reader.read("num_speculative_tokens", speculative.num_speculative_tokens);
  reader.read("enable_adaptive_verification", speculative.enable_adaptive_verification);
  reader.reject_unknown_keys();
}

void read_parallel(const json& value, ParallelConfig& parallel) {
  ObjectReader reader(value, "parallel");
  reader.read("num_ubatches", parallel.num_ubatches);
  reader.read("tensor_parallel_size", parallel.tensor_parallel_size);
  reader.reject_unknown_keys();
}

void read_lora(const json& value, LoRAConfig& lora) {
  ObjectReader reader(value, "lora");
  reader.read("capture_cases", lora.capture_cases);
  reader.reject_unknown_keys();
}

// An int is an exact kernel block size; {"multiple_of": n} accepts any multiple of n.
KernelBlockSizeEntry read_kernel_block_size(const json& value, const std::string& path) {
  if (!value.is_object()) return {detail::read_int(value, path), false};
  ObjectReader reader(value, path);
  const json* multiple = reader.field("multiple_of");
  reader.reject_unknown_keys();
  if (multiple == nullptr) fail("{}: expected an integer or {{\"multiple_of\": n}}", path);
  return {detail::read_int(*multiple, reader.path_of("multiple_of")), true};
}

BackendProfileConfig read_backend_profile(const json& value, const std::string& path) {
  ObjectReader reader(value, path);
  BackendProfileConfig profile;
  reader.read("name", profile.name);
  reader.read("kernel", profile.kernel);
  reader.read_choice("cudagraph_support", profile.cudagraph_support, "a CUDA graph support level",
                     kCGSupportNames, kAllCGSupports);
  reader.read("varlen_cudagraph_max_query_len", profile.varlen_cudagraph_max_query_len);
  reader.read("supports_device_cpu_query_lens_mismatch",
              profile.supports_device_cpu_query_lens_mismatch);
  reader.read("supports_batch_invariance", profile.supports_batch_invariance);
  if (const json* sizes = reader.field("kernel_block_sizes")) {
    const std::string sizes_path = reader.path_of("kernel_block_sizes");
    const json::array_t& items = detail::read_array(*sizes, sizes_path);
    profile.kernel_block_sizes.clear();
    for (std::size_t i = 0; i < items.size(); ++i) {
      profile.kernel_block_sizes.push_back(
          read_kernel_block_size(items[i], detail::element_path(sizes_path, i)));
    }
  }
  reader.read_choices("kv_cache_layouts", profile.kv_cache_layouts, "a KV cache layout",
                      kKVCacheLayoutNames, kAllLayouts);
  reader.read_choices("spec_kinds", profile.spec_kinds, "an attention type", kAttentionTypeNames,
                      kAllAttentionTypes);
  for (std::size_t i = 0; i < profile.spec_kinds.size(); ++i) {
    if (!is_state_layer_type(profile.spec_kinds[i])) continue;
    fail("{}: {} layers keep a recurrent state and take no attention backend",
         detail::element_path(reader.path_of("spec_kinds"), i),
         attention_type_name(profile.spec_kinds[i]));
  }
  reader.reject_unknown_keys();
  return profile;
}

std::vector<BackendProfileConfig> read_backends(const json& value) {
  std::vector<BackendProfileConfig> profiles;
  const json::array_t& items = detail::read_array(value, "backends");
  for (std::size_t i = 0; i < items.size(); ++i) {
    profiles.push_back(read_backend_profile(items[i], detail::element_path("backends", i)));
  }
  return profiles;
}

}  // namespace

EngineConfig load_config_json(const nlohmann::json& value) {
  ObjectReader reader(value, "");
  const json* model = reader.field("model");
  const json* cache = reader.field("cache");
  const json* compilation = reader.field("compilation");
  const json* scheduler = reader.field("scheduler");
  const json* speculative = reader.field("speculative");
  const json* parallel = reader.field("parallel");
  const json* lora = reader.field("lora");
  const json* backends = reader.field("backends");
  reader.reject_unknown_keys();  // first, so that a misspelt section is named as such

  EngineConfig config;
  if (model == nullptr) {
    fail("model.layers: missing; the config needs a \"model\" with its attention layers");
  }
  read_model(*model, config.model);
  if (cache != nullptr) read_cache(*cache, config.cache);
  if (compilation != nullptr) read_compilation(*compilation, config.compilation);
  if (scheduler != nullptr) read_scheduler(*scheduler, config.scheduler);
  if (speculative != nullptr) read_speculative(*speculative, config.speculative);
  if (parallel != nullptr) read_parallel(*parallel, config.parallel);
  if (lora != nullptr) read_lora(*lora, config.lora);
  if (backends != nullptr) config.backends = read_backends(*backends);
  validate_config(config);
  return config;
}

EngineConfig load_config_text(std::string_view text, std::string_view source) {
  try {
    return load_config_json(detail::parse_json_text(text));
  } catch (const Error& error) {
    // Keep the JSON path first; name the file after it.
    fail("{} (in {})", error.what(), printable(source));
  }
}

EngineConfig load_config_file(const std::string& path) {
  return load_config_text(detail::read_config_file(path), path);
}

}  // namespace attnrt
