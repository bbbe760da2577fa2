#pragma once
// attnrt::Error: the one exception type of the library. Its message names the culprit (a JSON path,
// a layer, a block id) and, where there is one, the fix; the CLI prints it and exits with code 2.
// (The library formats its messages with fmt inside src/; no public header needs fmt.)

#include <stdexcept>
#include <string>

#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace attnrt
