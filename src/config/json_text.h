#pragma once
// Parses config text strictly: nlohmann's parser, plus the rules a config needs that plain JSON
// leaves open. A duplicate key is an error (JSON lets the last one win silently); nesting is
// bounded (limits::kMaxJsonDepth); a number that overflows a double names its path. Every error
// is one attnrt::Error line, with the JSON path where there is one and all echoed text escaped.

#include <nlohmann/json.hpp>
#include <string_view>

namespace attnrt::detail {

nlohmann::json parse_json_text(std::string_view text);

// The same, but also reads the bare `Infinity`, `-Infinity` and `NaN` tokens Python's json module
// writes by default (Hugging Face config.json files carry them), as the doubles they name.
nlohmann::json parse_python_json_text(std::string_view text);

}  // namespace attnrt::detail
