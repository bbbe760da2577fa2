#pragma once
// attnrt::Error: the one exception type of the library. Its message names the culprit (a JSON path,
// a layer, a block id) and, where there is one, the fix; the CLI prints it and exits with code 2.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace attnrt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws an Error with a fmt-formatted message: `fail("layer {} has no KV cache", name)`.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace attnrt
