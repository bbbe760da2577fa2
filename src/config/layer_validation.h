#pragma once
// Checks of the model's layer list: each layer's fields, unique names, KV-sharing targets
// (SEMANTICS §3.4) and the placement of draft layers. Errors name `model.layers[i].<field>`,
// where i indexes the expanded execution-order list.

#include "attnrt/config/engine_config.h"

namespace attnrt::detail {

void validate_layers(const EngineConfig& config);

}  // namespace attnrt::detail
