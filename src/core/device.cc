#include "attnrt/core/device.h"

#include <fmt/format.h>

#include <charconv>

#include "core/fail.h"

namespace attnrt {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (text.starts_with(kCudaPrefix) && text.size() > kCudaPrefix.size()) {
    const std::string_view digits = text.substr(kCudaPrefix.size());
    int index = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    // from_chars accepts a leading '-'; a device index is a plain non-negative number.
    if (error == std::errc() && end == digits.data() + digits.size() && digits.front() != '-') {
      return cuda(index);
    }
  }
  fail("unknown device \"{}\"; expected \"cpu\", \"cuda\" or \"cuda:N\" (N a device index)", text);
}

std::string Device::str() const {
  return kind == Kind::cpu ? std::string("cpu") : fmt::format("cuda:{}", index);
}

}  // namespace attnrt
