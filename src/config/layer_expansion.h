#pragma once
// Reads `model.layers`: layer objects and `{"repeat": N, "layers": [...]}` blocks, expanded in
// order into the flat execution-order list, with `{i}`/`{r}` placeholders and defaults filled.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnrt/config/engine_config.h"

namespace attnrt::detail {

std::vector<LayerConfig> expand_layers(const nlohmann::json& layers, const std::string& path);

}  // namespace attnrt::detail
