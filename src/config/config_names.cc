#include "config_names.h"

#include <fmt/format.h>

#include <algorithm>

#include "attnrt/core/printable.h"

namespace attnrt::detail {

bool contains_name(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<AttentionType> find_attention_type(std::string_view name) {
  for (std::size_t i = 0; i < kAttentionTypeNames.size(); ++i) {
    if (kAttentionTypeNames[i] == name) return kAllAttentionTypes[i];
  }
  return std::nullopt;
}

std::string join_names(std::span<const std::string_view> names) {
  std::string result;
  for (std::string_view name : names) {
    if (!result.empty()) result += ", ";
    result += name;
  }
  return result;
}

std::string unknown_name_message(std::string_view name, std::string_view what,
                                 std::span<const std::string_view> names) {
  const std::string_view nearest = nearest_name(name, names);
  if (nearest.empty()) {
    return fmt::format("\"{}\" is not {}; use one of {}", printable(name), what, join_names(names));
  }
  return fmt::format("\"{}\" is not {}; did you mean \"{}\"? (one of {})", printable(name), what,
                     nearest, join_names(names));
}

}  // namespace attnrt::detail
