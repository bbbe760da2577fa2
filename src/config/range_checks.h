#pragma once
// The one check behind every documented range of docs/config.md: the message names the JSON path,
// the value and the bound it broke, in plain integers.

#include <cstdint>
#include <string_view>

#include "core/fail.h"

namespace attnrt::detail {

inline void require_range(std::int64_t value, std::int64_t low, std::int64_t high,
                          std::string_view path) {
  if (value < low && low == 1) fail("{}: must be a positive integer (got {})", path, value);
  if (value < low && low == 0) fail("{}: must not be negative (got {})", path, value);
  if (value < low) fail("{}: {} is too small (at least {})", path, value, low);
  if (value > high) fail("{}: {} is too large (at most {})", path, value, high);
}

}  // namespace attnrt::detail
