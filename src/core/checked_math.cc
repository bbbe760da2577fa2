#include "attnrt/core/checked_math.h"

#include "core/fail.h"

namespace attnrt {

void throw_mul_overflow(std::string_view what, std::uint64_t a, std::uint64_t b) {
  fail("{}: {} x {} does not fit in 64 bits", what, a, b);
}

void throw_add_overflow(std::string_view what, std::uint64_t a, std::uint64_t b) {
  fail("{}: {} + {} does not fit in 64 bits", what, a, b);
}

void throw_too_large(std::string_view what, std::uint64_t value, std::uint64_t max) {
  fail("{}: {} is larger than the largest supported value {}", what, value, max);
}

}  // namespace attnrt
