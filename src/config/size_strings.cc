// Byte sizes as people write them: "24GiB", "512 MiB", "1.5GiB", "2GB", "1000000".

#include <array>
#include <cctype>
#include <limits>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/printable.h"
#include "core/fail.h"

namespace attnrt {
namespace {

using Wide =
    unsigned __int128;  // holds a digit string times a unit without overflow checks per step

struct SizeUnit {
  std::string_view name;
  std::uint64_t bytes;
};

// Decimal units are powers of 1000, binary ones ("i") powers of 1024; both case-insensitive.
constexpr std::array<SizeUnit, 9> kSizeUnits = {{{"B", 1},
                                                 {"KB", 1'000},
                                                 {"MB", 1'000'000},
                                                 {"GB", 1'000'000'000},
                                                 {"TB", 1'000'000'000'000},
                                                 {"KIB", 1ull << 10},
                                                 {"MIB", 1ull << 20},
                                                 {"GIB", 1ull << 30},
                                                 {"TIB", 1ull << 40}}};

constexpr std::size_t kMaxDigits = 20;

// Only spaces separate a number from its unit: a line break inside a size is a mistake.
std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::uint64_t unit_bytes(std::string_view unit, std::string_view text) {
  if (unit.empty()) return 1;
  std::string upper(unit);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const SizeUnit& candidate : kSizeUnits) {
    if (candidate.name == upper) return candidate.bytes;
  }
  fail(
      "size \"{}\": unknown unit \"{}\"; use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, "
      "TiB (powers of 1024)",
      printable(text), printable(unit));
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  const std::string_view body = trim(text);
  std::size_t pos = 0;
  Wide mantissa = 0;  // the number's digits, without the decimal point
  Wide scale = 1;     // 10^(digits after the point)
  std::size_t digits = 0;
  bool seen_point = false;
  for (; pos < body.size(); ++pos) {
    const char c = body[pos];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    if (++digits > kMaxDigits) fail("size \"{}\": too many digits", printable(text));
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (seen_point) scale *= 10;
  }
  if (digits == 0) {
    fail("size \"{}\": expected a number of bytes, optionally with a unit, e.g. \"4GiB\"",
         printable(text));
  }
  const Wide total = mantissa * unit_bytes(trim(body.substr(pos)), text);
  if (total % scale != 0) fail("size \"{}\": not a whole number of bytes", printable(text));
  const Wide bytes = total / scale;
  if (bytes > std::numeric_limits<std::uint64_t>::max())
    fail("size \"{}\": too large", printable(text));
  return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (unit + 1 < kUnits.size() && bytes >= (std::uint64_t{1} << (10 * (unit + 1)))) ++unit;
  if (unit == 0) return fmt::format("{} B", bytes);
  const Wide unit_size = Wide{1} << (10 * unit);
  Wide hundredths = (Wide{bytes} * 100 + unit_size / 2) / unit_size;
  if (hundredths >= 102400 && unit + 1 < kUnits.size()) {  // rounds up to the next unit
    ++unit;
    hundredths = (hundredths + 512) / 1024;
  }
  const auto whole = static_cast<std::uint64_t>(hundredths / 100);
  const auto fraction = static_cast<unsigned>(hundredths % 100);
  if (fraction == 0) return fmt::format("{} {}", whole, kUnits[unit]);
  if (fraction % 10 == 0) return fmt::format("{}.{} {}", whole, fraction / 10, kUnits[unit]);
  return fmt::format("{}.{:02} {}", whole, fraction, kUnits[unit]);
}

}  // namespace attnrt
