#pragma once
// CUDAGraphMode: which CUDA graphs a runner captures (SEMANTICS §1.2). A mode is simple (NONE,
// PIECEWISE, FULL) or a pair (decode mode, mixed mode) that routes pure-decode and mixed batches
// to separate graphs. Descriptors only ever carry simple ("runtime") modes.

#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API CUDAGraphMode {
 public:
  static const CUDAGraphMode NONE;
  static const CUDAGraphMode PIECEWISE;
  static const CUDAGraphMode FULL;
  static const CUDAGraphMode FULL_DECODE_ONLY;    // (FULL, NONE)
  static const CUDAGraphMode FULL_AND_PIECEWISE;  // (FULL, PIECEWISE)

  constexpr CUDAGraphMode() = default;  // NONE

  // The five modes in vLLM's declaration order.
  static constexpr std::array<CUDAGraphMode, 5> all();
  // The modes a captured graph or a dispatched batch can carry: NONE, PIECEWISE, FULL.
  static constexpr std::array<CUDAGraphMode, 3> valid_runtime_modes();
  // "FULL_AND_PIECEWISE" → FULL_AND_PIECEWISE; throws Error listing the valid names.
  static CUDAGraphMode parse(std::string_view name);

  // True exactly for the pairs: decode and mixed batches take different routines.
  constexpr bool separate_routine() const { return decode_ != mixed_; }
  constexpr CUDAGraphMode decode_mode() const { return {decode_, decode_}; }
  constexpr CUDAGraphMode mixed_mode() const { return {mixed_, mixed_}; }
  // `simple` is one of the pair (or this mode itself). Throws Error if `simple` is a pair.
  bool has_mode(CUDAGraphMode simple) const;
  constexpr bool has_piecewise_cudagraphs() const {
    return decode_ == kPiecewise || mixed_ == kPiecewise;
  }
  constexpr bool requires_piecewise_compilation() const { return has_piecewise_cudagraphs(); }
  constexpr CUDAGraphMode max_cudagraph_mode() const {
    const Simple top = decode_ > mixed_ ? decode_ : mixed_;
    return {top, top};
  }
  constexpr bool has_full_cudagraphs() const { return decode_ == kFull || mixed_ == kFull; }

  // Bare name, as vLLM's str(): "FULL_DECODE_ONLY".
  std::string_view name() const;
  // "CUDAGraphMode.FULL_DECODE_ONLY", as vLLM's messages print it.
  std::string qualified_name() const;

  // vLLM's truthiness: every mode but NONE is true (`if (mode.mixed_mode()) ...`).
  constexpr explicit operator bool() const { return decode_ != kNone || mixed_ != kNone; }
  friend constexpr bool operator==(CUDAGraphMode, CUDAGraphMode) = default;

 private:
  friend struct std::hash<CUDAGraphMode>;
  enum Simple : std::uint8_t { kNone = 0, kPiecewise = 1, kFull = 2 };  // vLLM's values

  constexpr CUDAGraphMode(Simple decode, Simple mixed) : decode_(decode), mixed_(mixed) {}

  Simple decode_ = kNone;  // a simple mode has decode_ == mixed_
  Simple mixed_ = kNone;
};

inline constexpr CUDAGraphMode CUDAGraphMode::NONE{kNone, kNone};
inline constexpr CUDAGraphMode CUDAGraphMode::PIECEWISE{kPiecewise, kPiecewise};
inline constexpr CUDAGraphMode CUDAGraphMode::FULL{kFull, kFull};
inline constexpr CUDAGraphMode CUDAGraphMode::FULL_DECODE_ONLY{kFull, kNone};
inline constexpr CUDAGraphMode CUDAGraphMode::FULL_AND_PIECEWISE{kFull, kPiecewise};

constexpr std::array<CUDAGraphMode, 5> CUDAGraphMode::all() {
  return {NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE};
}

constexpr std::array<CUDAGraphMode, 3> CUDAGraphMode::valid_runtime_modes() {
  return {NONE, PIECEWISE, FULL};
}

// The names of CUDAGraphMode::all(), in that order: the spelling of compilation.cudagraph_mode.
inline constexpr std::array<std::string_view, 5> kCUDAGraphModeNames = {
    "NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"};

ATTNRT_API std::ostream& operator<<(std::ostream& out, CUDAGraphMode mode);  // the bare name

}  // namespace attnrt

template <>
struct std::hash<attnrt::CUDAGraphMode> {
  std::size_t operator()(attnrt::CUDAGraphMode mode) const noexcept {
    return static_cast<std::size_t>(mode.decode_) * 3 + mode.mixed_;
  }
};
