#include "cli_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "attnrt/core/nearest_name.h"
#include "attnrt/core/printable.h"
#include "core/fail.h"

namespace attnrt::cli {
namespace {

template <typename T>
bool parse_whole(std::string_view text, T& value) {
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && stop == end && !text.empty();
}

std::string join(std::span<const std::string_view> names) {
  std::string result;
  for (std::string_view name : names) {
    if (!result.empty()) result += ", ";
    result += name;
  }
  return result;
}

}  // namespace

CLI::Validator integer_in(std::int64_t low, std::int64_t high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        std::int64_t value = 0;
        if (parse_whole(text, value) && value >= low && value <= high) return {};
        return fmt::format("\"{}\" is not an integer from {} to {}", printable(text, 64), low,
                           high);
      },
      fmt::format("INT in {}..{}", low, high));
}

CLI::Validator number_in(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        double value = 0;
        if (parse_whole(text, value) && value >= low && value <= high) return {};
        return fmt::format("\"{}\" is not a number from {} to {}", printable(text, 64), low, high);
      },
      fmt::format("NUMBER in {}..{}", low, high));
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; },
      "TEXT");
}

CLI::Validator one_of(std::span<const std::string_view> names, std::string_view what) {
  const std::string description(what);
  return CLI::Validator(
      [names, description](std::string& text) -> std::string {
        for (std::string_view name : names) {
          if (name == text) return {};
        }
        const std::string_view nearest = nearest_name(text, names);
        if (!nearest.empty()) {
          return fmt::format("\"{}\" is not {}; did you mean {}? (one of {})", printable(text, 64),
                             description, nearest, join(names));
        }
        return fmt::format("\"{}\" is not {}; use one of {}", printable(text, 64), description,
                           join(names));
      },
      join(names));
}

std::uint64_t parse_unsigned(std::string_view option, std::string_view text) {
  std::uint64_t value = 0;
  const bool digits_only = text.find_first_not_of("0123456789") == std::string_view::npos;
  if (!digits_only || !parse_whole(text, value)) {
    fail("{}: \"{}\" is not an integer from 0 to {}", option, printable(text, 64),
         std::numeric_limits<std::uint64_t>::max());
  }
  return value;
}

}  // namespace attnrt::cli
