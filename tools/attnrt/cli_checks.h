#pragma once
// Validators for the CLI's options. CLI11's own print ranges like "0 to 1.797…e308" and list
// choices across lines; these say, in one line and plain numbers, what the option accepts.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace attnrt::cli {

// An integer from `low` to `high`, written in decimal digits (an optional leading '-').
CLI::Validator integer_in(std::int64_t low, std::int64_t high);
// A decimal number from `low` to `high` (seconds and the like).
CLI::Validator number_in(double low, double high);
// Any non-empty text: an empty path, size or name is a mistake, not "use the default".
CLI::Validator non_empty();
// One of `names`, exactly; a near miss is suggested. `names` must outlive the validator.
CLI::Validator one_of(std::span<const std::string_view> names, std::string_view what);

// A 64-bit unsigned integer in decimal digits, nothing else (no sign, no spaces); Error naming
// `option` otherwise.
std::uint64_t parse_unsigned(std::string_view option, std::string_view text);

}  // namespace attnrt::cli
