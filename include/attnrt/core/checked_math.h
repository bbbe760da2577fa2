#pragma once
// Overflow-checked arithmetic for sizes derived from input (page bytes, tensor bytes, buffer
// lengths). A product of config values can exceed 64 bits long before any allocation is tried;
// these refuse it with an Error naming the quantity, so nothing downstream divides by a wrapped
// zero or allocates a wrapped size.

#include <cstdint>
#include <limits>
#include <string_view>

#include "attnrt/core/error.h"
#include "attnrt/core/export.h"

namespace attnrt {

// The throwing halves, out of line (src/core/checked_math.cc), so that this header needs no fmt.
// Part of the API, not attnrt::detail: the inline functions below call them from the user's code,
// so libattnrt.so exports them.
[[noreturn]] ATTNRT_API void throw_mul_overflow(std::string_view what, std::uint64_t a,
                                                std::uint64_t b);
[[noreturn]] ATTNRT_API void throw_add_overflow(std::string_view what, std::uint64_t a,
                                                std::uint64_t b);
[[noreturn]] ATTNRT_API void throw_too_large(std::string_view what, std::uint64_t value,
                                             std::uint64_t max);

// a × b; throws Error("<what>: a × b overflows ...") instead of wrapping.
inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) throw_mul_overflow(what, a, b);
  return product;
}

// a + b; throws like checked_mul.
inline std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) throw_add_overflow(what, a, b);
  return sum;
}

// The product of every factor, each step checked: checked_product("page bytes", heads, size, 2).
template <typename... Factors>
std::uint64_t checked_product(std::string_view what, Factors... factors) {
  std::uint64_t product = 1;
  ((product = checked_mul(product, static_cast<std::uint64_t>(factors), what)), ...);
  return product;
}

// `value` as a T (int, std::size_t, std::int64_t ...); throws when it does not fit.
template <typename T>
T checked_cast(std::uint64_t value, std::string_view what) {
  if (value > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
    throw_too_large(what, value, static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
  }
  return static_cast<T>(value);
}

}  // namespace attnrt
