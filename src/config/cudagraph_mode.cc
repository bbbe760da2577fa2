#include "attnrt/config/cudagraph_mode.h"

#include <fmt/ranges.h>

#include <ostream>

#include "core/fail.h"

namespace attnrt {

CUDAGraphMode CUDAGraphMode::parse(std::string_view name) {
  const std::array<CUDAGraphMode, 5> modes = all();
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (kCUDAGraphModeNames[i] == name) return modes[i];
  }
  fail("unknown CUDA graph mode \"{}\"; expected one of {}", name,
       fmt::join(kCUDAGraphModeNames, ", "));
}

bool CUDAGraphMode::has_mode(CUDAGraphMode simple) const {
  if (simple.separate_routine()) {
    fail("CUDAGraphMode::has_mode takes a simple mode (NONE, PIECEWISE or FULL), not {}",
         simple.name());
  }
  return decode_ == simple.decode_ || mixed_ == simple.decode_;
}

std::string_view CUDAGraphMode::name() const {
  const std::array<CUDAGraphMode, 5> modes = all();
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (modes[i] == *this) return kCUDAGraphModeNames[i];
  }
  return "INVALID";  // unreachable: the constructor is private and every constant is listed
}

std::string CUDAGraphMode::qualified_name() const {
  return "CUDAGraphMode." + std::string(name());
}

std::ostream& operator<<(std::ostream& out, CUDAGraphMode mode) {
  return out << mode.name();
}

}  // namespace attnrt
