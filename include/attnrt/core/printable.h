#pragma once
// Text from input (names, file contents, paths) echoed in a message must not forge a second line
// or drive the terminal: printable() keeps valid UTF-8 and printable ASCII and spells every other
// byte as an escape, so an error message is always one line of plain text.

#include <cstddef>
#include <string>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

// "\n" → "\\n", "\t" → "\\t", other control bytes, DEL and bytes of invalid UTF-8 → "\\xNN".
// Text past `max_bytes` of input is cut and marked with "...".
ATTNRT_API std::string printable(std::string_view text, std::size_t max_bytes = 256);

// True when printable(text) would change nothing.
ATTNRT_API bool is_printable(std::string_view text);

}  // namespace attnrt
