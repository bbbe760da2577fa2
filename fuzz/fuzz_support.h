#pragma once
// Helpers shared by the fuzz targets: the bytes reader the step target decodes its operations
// with, and the way a target turns "this should not happen" into a crash libFuzzer keeps.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

namespace attnrt::fuzz {

// attnrt::Error is the documented outcome of bad input; anything else escaping the library is a
// finding. abort() rather than rethrow so that the report names the exception before the stack.
[[noreturn]] inline void unexpected_exception(const std::exception& error) {
  std::fprintf(stderr, "fuzz: unexpected exception %s: %s\n", typeid(error).name(), error.what());
  std::abort();
}

// A broken invariant the target checks itself (state changed by a call that threw, a wrong slot).
[[noreturn]] inline void invariant_failed(const char* what, long long detail) {
  std::fprintf(stderr, "fuzz: invariant failed: %s (%lld)\n", what, detail);
  std::abort();
}

inline void check(bool condition, const char* what, long long detail = 0) {
  if (!condition) invariant_failed(what, detail);
}

// Reads the fuzz input front to back; past its end every read returns zero, so any prefix of an
// input decodes to the same operations.
class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool empty() const { return next_ >= size_; }
  std::uint8_t byte() { return empty() ? 0 : data_[next_++]; }
  bool flag() { return (byte() & 1) != 0; }
  // [0, bound) for a bound of at most 65536 (one byte when bound <= 256); 0 when bound <= 1.
  int below(int bound) {
    if (bound <= 1) return 0;
    const int value = bound <= 256 ? byte() : byte() | (byte() << 8);
    return value % bound;
  }
  std::int32_t int32() {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= static_cast<std::uint32_t>(byte()) << (8 * i);
    return static_cast<std::int32_t>(value);
  }
  // Mostly small counts, sometimes a raw 32-bit value: the edges (negative, INT_MAX) matter most.
  std::int32_t count(int small_bound) {
    const std::uint8_t kind = byte();
    if (kind < 224) return below(small_bound);
    if (kind < 240) return -below(small_bound) - 1;
    return int32();
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t next_ = 0;
};

}  // namespace attnrt::fuzz
