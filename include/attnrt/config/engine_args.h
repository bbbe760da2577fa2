#pragma once
// vLLM's engine arguments that change a plan, spelled as vLLM spells them on its command line
// (`--max-model-len`, `--tensor-parallel-size`, ...). Each one that is set overrides the config
// file; unset ones leave it alone. Applied to attnrt configs and Hugging Face imports alike.

#include <cstdint>
#include <optional>
#include <string>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct EngineArgs {
  std::optional<int> max_model_len;
  std::optional<int> tensor_parallel_size;
  std::optional<int> block_size;
  std::optional<std::string> kv_cache_dtype;  // "auto" = the model's dtype, or a cache dtype name
  std::optional<std::int64_t> num_gpu_blocks_override;
  std::optional<bool> kv_sharing_fast_prefill;
  std::optional<bool> enable_prefix_caching;    // --enable-prefix-caching / --no-enable-...
  std::optional<std::string> mamba_cache_mode;  // "none", "align" or "all"
  std::optional<int> max_num_seqs;
  std::optional<int> max_num_batched_tokens;
  std::optional<std::uint64_t> memory;  // KV cache bytes per rank (`--memory`)
};

// The cache dtype `--kv-cache-dtype NAME` selects: "auto" is `model_dtype`; otherwise one of
// vLLM's names attnrt can store ("bfloat16", "float16", "float32", "fp8", "fp8_e4m3"). Throws an
// Error naming the value (fp8_e5m2 and the other vLLM formats attnrt has no kernels for).
ATTNRT_API DType kv_cache_dtype_from_name(std::string_view name, DType model_dtype);

// Overrides `config` with every argument that is set, then validates it; an error names the
// argument as the culprit (`--block-size: ...`) and leaves `config` unchanged. `model_dtype` is
// what "auto" means for this model (bf16 for attnrt's own configs).
ATTNRT_API void apply_engine_args(EngineConfig& config, const EngineArgs& args, DType model_dtype);

}  // namespace attnrt
