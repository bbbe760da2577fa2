#pragma once
// The version of attnrt these headers belong to. It must equal `project(attnrt VERSION ...)` in the
// top-level CMakeLists.txt, which refuses to configure when they differ: bump both together.

#include <string_view>

#define ATTNRT_VERSION_MAJOR 0
#define ATTNRT_VERSION_MINOR 2
#define ATTNRT_VERSION_PATCH 0
#define ATTNRT_VERSION_STRING "0.2.0"
// One number for preprocessor comparisons: 0.2.0 is 200, 1.4.12 is 10412.
#define ATTNRT_VERSION \
  (ATTNRT_VERSION_MAJOR * 10000 + ATTNRT_VERSION_MINOR * 100 + ATTNRT_VERSION_PATCH)

namespace attnrt {

// "MAJOR.MINOR.PATCH" of the headers (the library built with them has the same version).
constexpr std::string_view version() {
  return ATTNRT_VERSION_STRING;
}

}  // namespace attnrt
