#pragma once
// What Python holds for a loaded config: the EngineConfig and, for a Hugging Face config, its
// import (the plan JSON reports it). Shared; never changed once loaded.

#include <memory>
#include <optional>

#include "attnrt/config/engine_config.h"
#include "attnrt/config/hf_import.h"

namespace attnrt::python {

struct PyConfig {
  EngineConfig config;
  std::optional<HfImport> hf;
};

using PyConfigPtr = std::shared_ptr<PyConfig>;

}  // namespace attnrt::python
