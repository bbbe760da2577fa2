#include "attnrt/core/printable.h"

#include <fmt/format.h>

#include <cstdint>

namespace attnrt {
namespace {

// Length of the well-formed UTF-8 sequence at text[pos] (2..4), or 0 if it is not one. ASCII is
// handled by the caller. Overlong forms, surrogates and code points past U+10FFFF are refused.
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[pos + i]); };
  const std::uint8_t lead = byte(0);
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07u;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0u) != 0x80u) return 0;
    code_point = (code_point << 6) | (byte(i) & 0x3Fu);
  }
  constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < kMinimum[length] || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

bool is_plain_ascii(std::uint8_t byte) {
  return byte >= 0x20 && byte < 0x7F;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  std::string result;
  result.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const auto byte = static_cast<std::uint8_t>(text[pos]);
    if (is_plain_ascii(byte)) {
      result += static_cast<char>(byte);
      ++pos;
    } else if (byte == '\n') {
      result += "\\n";
      ++pos;
    } else if (byte == '\t') {
      result += "\\t";
      ++pos;
    } else if (const std::size_t length = byte >= 0x80 ? utf8_sequence_length(text, pos) : 0) {
      result.append(text.substr(pos, length));
      pos += length;
    } else {
      result += fmt::format("\\x{:02x}", byte);
      ++pos;
    }
  }
  if (cut) result += "...";
  return result;
}

bool is_printable(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    const auto byte = static_cast<std::uint8_t>(text[pos]);
    if (is_plain_ascii(byte)) {
      ++pos;
    } else if (const std::size_t length = byte >= 0x80 ? utf8_sequence_length(text, pos) : 0) {
      pos += length;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace attnrt
