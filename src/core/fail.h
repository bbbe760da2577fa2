#pragma once
// fail(...): how the library throws its Error, with a fmt-formatted message. Internal, so that the
// public headers do not pull fmt into every embedder's build.

#include <fmt/format.h>

#include <utility>

#include "attnrt/core/error.h"

namespace attnrt {

// Throws an Error with a fmt-formatted message: `fail("layer {} has no KV cache", name)`.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace attnrt
