#pragma once
// Byte counts as people read them in messages and descriptions (internal to src/kv).

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace attnrt::detail {

// "20 GiB" when a binary unit divides the count exactly, else "1000000 B (976.6 KiB)".
inline std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<std::pair<std::uint64_t, const char*>, 3> kUnits = {
      {{1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}}};
  if (bytes == 0) return "0 B";
  for (const auto& [unit, name] : kUnits) {
    if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, name);
  }
  for (const auto& [unit, name] : kUnits) {
    if (bytes >= unit) {
      return fmt::format("{} B ({:.1f} {})", bytes, static_cast<double>(bytes) / unit, name);
    }
  }
  return fmt::format("{} B", bytes);
}

}  // namespace attnrt::detail
