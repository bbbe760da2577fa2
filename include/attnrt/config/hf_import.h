#pragma once
// Hugging Face `config.json` → EngineConfig: the attention layers vLLM would build for the model,
// with vLLM's head-size, KV-head and max-length precedence and its layer names (docs/hf-import.md).
// Every error names the model_type and the config field; an architecture or field combination the
// importer cannot map is refused, never guessed.

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/config/engine_args.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct ImportOptions {
  EngineArgs args;  // vLLM's engine arguments; they override what the config implies
};

// One kind of layer the import produced, with the config fields that decided it (`plan` prints
// these under the model line).
struct ImportedLayerKind {
  AttentionType type = AttentionType::full;
  int count = 0;
  int num_heads = 0;     // whole model
  int num_kv_heads = 0;  // whole model
  int head_size = 0;
  int head_size_v = 0;
  int sliding_window = 0;
  int attention_chunk_size = 0;
  int sharing = 0;          // of `count`, the layers that read an earlier layer's KV cache
  bool v_copies_k = false;  // K == V layers: the V written is a copy of K
  std::optional<StateLayerConfig> state;  // mamba and linear_attention layers
  std::string decided_by;  // e.g. "layer_types, head_dim, num_key_value_heads, sliding_window"

  friend bool operator==(const ImportedLayerKind&, const ImportedLayerKind&) = default;
};

struct HfImport {
  EngineConfig config;
  std::string model_type;    // of the language model (`text_config.model_type` for wrappers)
  std::string architecture;  // architectures[0], or empty
  DType model_dtype = DType::bf16;
  int derived_max_model_len = 0;  // the config's own limit (vLLM's derived max_model_len)
  std::string max_len_source;     // the field it came from, e.g. "max_position_embeddings"
  std::vector<ImportedLayerKind> kinds;
  std::vector<std::string> v_copies_k_layers;  // layers whose V is a copy of K (Gemma 4)
  std::vector<std::string> notes;              // fields read but not used for the cache, and why
};

// True when `json` is a Hugging Face config (`architectures` or `model_type` at the top level)
// rather than an attnrt config (`model`).
ATTNRT_API bool is_hf_config(const nlohmann::json& json);

// Imports a parsed config.json. `options.args` are applied as on the command line.
ATTNRT_API HfImport import_hf_model(const nlohmann::json& json, const ImportOptions& options = {});
ATTNRT_API EngineConfig import_hf_config(const nlohmann::json& json,
                                         const ImportOptions& options = {});

// Parses config.json text as Python writes it: bare `Infinity`, `-Infinity` and `NaN` are read.
ATTNRT_API nlohmann::json parse_hf_config_text(std::string_view text);

}  // namespace attnrt
