#pragma once
// One entry point for "the model the user points at": an attnrt config file, a Hugging Face
// config.json, or a model folder holding one, told apart by content (`model` vs
// `architectures`/`model_type`). vLLM's engine arguments apply to each.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "attnrt/config/engine_args.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/config/hf_import.h"
#include "attnrt/core/export.h"

namespace attnrt {

struct LoadedModel {
  EngineConfig config;
  std::optional<HfImport> hf;                     // set when the file was a Hugging Face config
  std::shared_ptr<const nlohmann::json> hf_json;  // the config.json it came from
  std::string source;  // the file read ("<default>" for the embedded config)
};

// An empty `path` loads the embedded default. Errors name the file after the culprit.
ATTNRT_API LoadedModel load_model(const std::string& path, const EngineArgs& args = {});

}  // namespace attnrt
