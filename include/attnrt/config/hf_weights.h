#pragma once
// Weight bytes of a Hugging Face model on one tensor-parallel rank, from its config.json alone:
// how much of a GPU the weights take before any KV cache is planned. The shapes and the sharding
// follow vLLM's model files (vllm/model_executor/models/*.py); parameters count the checkpoint.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "attnrt/core/export.h"

namespace attnrt {

struct WeightComponent {
  std::string name;              // "embeddings", "attention", "mlp (dense)", "mlp (experts)", ...
  std::uint64_t parameters = 0;  // whole model, before TP division
  std::uint64_t bytes = 0;       // on one tensor-parallel rank
};

struct WeightBreakdown {
  std::vector<WeightComponent> components;
  std::uint64_t total_parameters = 0;
  std::uint64_t total_bytes = 0;         // per rank, sum of components' bytes
  std::string storage;                   // e.g. "bfloat16", "mxfp4 experts, bfloat16 rest"
  std::vector<std::string> not_counted;  // e.g. "vision tower (vision_config)"
};

// `config` is the whole config.json (the language model may be under "text_config"). Throws
// attnrt::Error naming the model_type and the field for an unknown family, an unsupported
// quant_method, a missing or mistyped field, or sizes that overflow 64 bits.
ATTNRT_API WeightBreakdown estimate_hf_weight_bytes(const nlohmann::json& config,
                                                    int tensor_parallel_size);

}  // namespace attnrt
