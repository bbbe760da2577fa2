#pragma once
// Where memory lives: the host ("cpu") or a CUDA device ("cuda:N", only in CUDA builds).

#include <string>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

struct ATTNRT_API Device {
  enum class Kind { cpu, cuda };

  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return Device{}; }
  static Device cuda(int index) { return Device{Kind::cuda, index}; }
  // "cpu", "cuda", "cuda:N". Throws Error for anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return kind == Kind::cpu; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace attnrt
