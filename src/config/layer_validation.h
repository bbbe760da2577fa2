#pragma once
// Checks of the model's layer list: each layer's fields, unique names, KV-sharing targets
// (SEMANTICS §3.4) and the placement of draft layers. Errors name `model.layers[i].<field>`,
// where i indexes the expanded execution-order list.

#include <string_view>

#include "attnrt/config/engine_config.h"

namespace attnrt::detail {

void validate_layers(const EngineConfig& config);

// A name from input (layer, target, backend, model, profile): at most limits::kMaxNameBytes of
// printable UTF-8, so that messages echoing it stay one line. Empty is allowed here.
void require_name_text(std::string_view name, std::string_view path);

}  // namespace attnrt::detail
