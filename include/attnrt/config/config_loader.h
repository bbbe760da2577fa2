#pragma once
// Loading and validating the JSON config (DESIGN.md §3). Every error is an attnrt::Error whose
// message starts with the JSON path of the culprit, e.g. `model.layers[3].kv_sharing_target: ...`.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"

namespace attnrt {

// Parses JSON text; `source` names it in errors (a file path, or "<default>").
ATTNRT_API EngineConfig load_config_text(std::string_view text, std::string_view source);
ATTNRT_API EngineConfig load_config_file(const std::string& path);
ATTNRT_API EngineConfig load_config_json(const nlohmann::json& json);
// The embedded default (examples/tiny-yoco.json).
ATTNRT_API EngineConfig default_config();
ATTNRT_API std::string_view default_config_text();

// Checks the invariants load_config_json checks; for configs built in code.
ATTNRT_API void validate_config(const EngineConfig& config);

// "24GiB", "512 MiB", "1.5GB", "1000000" → bytes. Throws Error naming the text.
ATTNRT_API std::uint64_t parse_size(std::string_view text);
// 2147483648 → "2 GiB"; 1536 → "1.5 KiB".
ATTNRT_API std::string format_size(std::uint64_t bytes);

}  // namespace attnrt
