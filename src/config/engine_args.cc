// vLLM's engine arguments over a loaded config. The config is changed only when every argument
// is valid, so an error leaves it as it was.

#include "attnrt/config/engine_args.h"

#include <algorithm>
#include <array>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/printable.h"
#include "config_names.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// vLLM's --kv-cache-dtype choices attnrt has no storage or kernels for.
constexpr std::array<std::string_view, 4> kUnsupportedVllmCacheDtypes = {"fp8_e5m2", "fp8_inc",
                                                                         "fp8_ds_mla", "int8"};
constexpr std::array<std::string_view, 6> kCacheDtypeNames = {"auto",    "bfloat16", "float16",
                                                              "float32", "fp8",      "fp8_e4m3"};

}  // namespace

DType kv_cache_dtype_from_name(std::string_view name, DType model_dtype) {
  if (name == "auto") return model_dtype;
  if (detail::contains_name(kUnsupportedVllmCacheDtypes, name)) {
    fail("\"{}\" is a vLLM cache dtype attnrt cannot store; use one of {}", name,
         detail::join_names(kCacheDtypeNames));
  }
  if (!detail::contains_name(kCacheDtypeNames, name)) {
    fail("{}", detail::unknown_name_message(printable(name), "a KV cache dtype", kCacheDtypeNames));
  }
  return parse_dtype(name);
}

void apply_engine_args(EngineConfig& config, const EngineArgs& args, DType model_dtype) {
  EngineConfig updated = config;
  // Each argument is validated with the rest of the config, so its own name leads the message.
  const auto apply = [&](std::string_view flag, auto&& change) {
    try {
      change();
      validate_config(updated);
    } catch (const Error& error) {
      fail("{}: {}", flag, error.what());
    }
  };
  if (args.max_model_len) {
    apply("--max-model-len", [&] { updated.model.max_model_len = *args.max_model_len; });
  }
  if (args.block_size) {
    apply("--block-size", [&] { updated.cache.block_size = *args.block_size; });
  }
  if (args.kv_cache_dtype) {
    apply("--kv-cache-dtype", [&] {
      updated.cache.dtype = kv_cache_dtype_from_name(*args.kv_cache_dtype, model_dtype);
    });
  }
  if (args.num_gpu_blocks_override) {
    apply("--num-gpu-blocks-override",
          [&] { updated.cache.num_gpu_blocks_override = *args.num_gpu_blocks_override; });
  }
  if (args.kv_sharing_fast_prefill) {
    apply("--kv-sharing-fast-prefill",
          [&] { updated.cache.kv_sharing_fast_prefill = *args.kv_sharing_fast_prefill; });
  }
  if (args.enable_prefix_caching) {
    apply("--enable-prefix-caching",
          [&] { updated.cache.enable_prefix_caching = *args.enable_prefix_caching; });
  }
  if (args.mamba_cache_mode) {
    apply("--mamba-cache-mode", [&] {
      const auto* name = std::ranges::find(kMambaCacheModeNames, *args.mamba_cache_mode);
      if (name == kMambaCacheModeNames.end()) {
        fail("{}", detail::unknown_name_message(printable(*args.mamba_cache_mode, 40),
                                                "a Mamba cache mode", kMambaCacheModeNames));
      }
      updated.cache.mamba_cache_mode =
          kAllMambaCacheModes[static_cast<std::size_t>(name - kMambaCacheModeNames.begin())];
    });
  }
  if (args.max_num_seqs) {
    apply("--max-num-seqs", [&] { updated.scheduler.max_num_seqs = *args.max_num_seqs; });
  }
  if (args.max_num_batched_tokens) {
    apply("--max-num-batched-tokens",
          [&] { updated.scheduler.max_num_batched_tokens = *args.max_num_batched_tokens; });
  }
  if (args.memory) {
    apply("--memory", [&] { updated.cache.memory = *args.memory; });
  }
  // Last: its message names the layer whose heads do not divide, under the final geometry.
  if (args.tensor_parallel_size) {
    apply("--tensor-parallel-size",
          [&] { updated.parallel.tensor_parallel_size = *args.tensor_parallel_size; });
  }
  config = std::move(updated);
}

}  // namespace attnrt
