#pragma once
// Reads the `state` object of a mamba or linear_attention layer (docs/config.md, SEMANTICS §4.4).

#include <nlohmann/json.hpp>
#include <string>

#include "attnrt/config/engine_config.h"

namespace attnrt::detail {

// `state` of a layer of `type`: `mixer` (mamba: mamba2 by default, or mamba1 / short_conv;
// linear_attention: gated_delta_net), the mixer's dimensions, and `conv_dtype` / `ssm_dtype`
// (bfloat16 by default). Errors name the JSON path.
StateLayerConfig read_state_layer(const nlohmann::json& value, const std::string& path,
                                  AttentionType type);

}  // namespace attnrt::detail
