#include "attnrt/core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "attnrt/core/printable.h"
#include "core/fail.h"

namespace attnrt {
namespace {

constexpr std::uint32_t kFloatSignMask = 0x8000'0000u;
constexpr std::uint32_t kFloatInfBits = 0x7F80'0000u;
constexpr int kFloatMantissaBits = 23;
constexpr int kFloatBias = 127;

// Every accepted spelling, canonical names first (they are listed in errors).
constexpr std::pair<std::string_view, DType> kDTypeNames[] = {
    {"float32", DType::f32},       {"float16", DType::f16}, {"bfloat16", DType::bf16},
    {"fp8_e4m3", DType::fp8_e4m3}, {"int8", DType::int8},   {"int32", DType::int32},
    {"int64", DType::int64},       {"f32", DType::f32},     {"fp32", DType::f32},
    {"f16", DType::f16},           {"half", DType::f16},    {"bf16", DType::bf16},
    {"fp8", DType::fp8_e4m3},
};

// Rounds the magnitude of a finite float (its bits without the sign) to a narrower binary format
// with `mantissa_bits` and exponent `bias`, ties to even. The result is the narrow format's
// magnitude code; it may exceed the largest finite code (the caller decides between infinity and
// saturation). Float subnormals lie far below f16's and fp8's range and round to zero.
std::uint32_t round_magnitude(std::uint32_t magnitude, int mantissa_bits, int bias) {
  const int float_exponent = static_cast<int>(magnitude >> kFloatMantissaBits);
  if (float_exponent == 0) return 0;
  const std::uint32_t significand = (magnitude & 0x7F'FFFFu) | 0x80'0000u;
  const int exponent = float_exponent - kFloatBias + bias;  // biased in the narrow format
  // Normal results keep the implicit bit in the exponent field; subnormals shift further right.
  const int shift = kFloatMantissaBits - mantissa_bits + (exponent >= 1 ? 0 : 1 - exponent);
  if (shift > 24) return 0;  // below half the smallest subnormal
  std::uint32_t code = significand >> shift;
  if (exponent >= 1) {
    code = (static_cast<std::uint32_t>(exponent) << mantissa_bits) |
           (code & ((1u << mantissa_bits) - 1));
  }
  const std::uint32_t remainder = significand & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  // A carry out of the mantissa bumps the exponent, which is exactly the next representable value.
  if (remainder > half || (remainder == half && (code & 1u))) ++code;
  return code;
}

template <typename Int>
Int saturating_round(float value) {
  if (std::isnan(value)) return 0;
  // -min() is a power of two, so it is exact as a float.
  constexpr float limit = -static_cast<float>(std::numeric_limits<Int>::min());
  const float rounded = std::nearbyint(value);  // ties to even in the default rounding mode
  if (rounded >= limit) return std::numeric_limits<Int>::max();
  if (rounded < -limit) return std::numeric_limits<Int>::min();
  return static_cast<Int>(rounded);
}

template <typename T>
T load(const std::byte* address) {
  T value;
  std::memcpy(&value, address, sizeof(T));
  return value;
}

template <typename T>
void store(std::byte* address, T value) {
  std::memcpy(address, &value, sizeof(T));
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::fp8_e4m3:
    case DType::int8:
      return 1;
    case DType::int32:
      return 4;
    case DType::int64:
      return 8;
  }
  fail("invalid DType value {}", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::fp8_e4m3:
      return "fp8_e4m3";
    case DType::int8:
      return "int8";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
  }
  fail("invalid DType value {}", static_cast<int>(dtype));
}

DType parse_dtype(std::string_view name) {
  for (const auto& [spelling, dtype] : kDTypeNames) {
    if (spelling == name) return dtype;
  }
  std::string accepted;
  for (const auto& [spelling, dtype] : kDTypeNames) {
    if (!accepted.empty()) accepted += ", ";
    accepted += spelling;
  }
  fail("unknown dtype \"{}\"; accepted names: {}", printable(name), accepted);
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 ||
         dtype == DType::fp8_e4m3;
}

std::uint16_t float_to_f16_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits & kFloatSignMask) >> 16);
  const std::uint32_t magnitude = bits & ~kFloatSignMask;
  if (magnitude > kFloatInfBits) {  // NaN: keep the top payload bits, force quiet
    return static_cast<std::uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  if (magnitude >= 0x4780'0000u) return sign | 0x7C00u;  // >= 65536 (or inf): infinity
  const std::uint32_t code = round_magnitude(magnitude, 10, 15);
  // 65520 and above round past 65504 into the infinity code 0x7C00, as IEEE requires.
  return static_cast<std::uint16_t>(sign | code);
}

float f16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) return std::bit_cast<float>(sign | kFloatInfBits | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + kFloatBias) << kFloatMantissaBits) |
                              (mantissa << 13));
}

std::uint16_t float_to_bf16_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & ~kFloatSignMask) > kFloatInfBits) {  // NaN: truncate and force quiet
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  // Ties to even at the 16-bit cut; overflow carries into the exponent (up to infinity).
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

// e4m3fn has no infinities: magnitudes above 448 (infinity included) saturate to 448, as vLLM
// clamps to the fp8 maximum before converting. NaN maps to the only NaN code, 0x7F (with sign).
std::uint8_t float_to_fp8_e4m3_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint8_t>((bits & kFloatSignMask) >> 24);
  const std::uint32_t magnitude = bits & ~kFloatSignMask;
  if (magnitude > kFloatInfBits) return sign | 0x7Fu;
  if (magnitude >= 0x43E0'0000u) return sign | 0x7Eu;  // >= 448 (or inf)
  const std::uint32_t code = round_magnitude(magnitude, 3, 7);
  return static_cast<std::uint8_t>(sign | (code > 0x7Eu ? 0x7Eu : code));
}

float fp8_e4m3_bits_to_float(std::uint8_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x80u) << 24;
  const std::uint32_t exponent = (bits >> 3) & 0xFu;
  const std::uint32_t mantissa = bits & 0x7u;
  if (exponent == 0xF && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7FC0'0000u);
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-9
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -9);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent - 7 + kFloatBias) << kFloatMantissaBits) |
                              (mantissa << 20));
}

float load_as_float(DType dtype, const std::byte* address) {
  switch (dtype) {
    case DType::f32:
      return load<float>(address);
    case DType::f16:
      return f16_bits_to_float(load<std::uint16_t>(address));
    case DType::bf16:
      return bf16_bits_to_float(load<std::uint16_t>(address));
    case DType::fp8_e4m3:
      return fp8_e4m3_bits_to_float(load<std::uint8_t>(address));
    case DType::int8:
      return static_cast<float>(load<std::int8_t>(address));
    case DType::int32:
      return static_cast<float>(load<std::int32_t>(address));
    case DType::int64:
      return static_cast<float>(load<std::int64_t>(address));
  }
  fail("invalid DType value {}", static_cast<int>(dtype));
}

// Integers round to nearest (ties to even) and saturate; NaN stores as 0.
void store_from_float(DType dtype, std::byte* address, float value) {
  switch (dtype) {
    case DType::f32:
      return store(address, value);
    case DType::f16:
      return store(address, float_to_f16_bits(value));
    case DType::bf16:
      return store(address, float_to_bf16_bits(value));
    case DType::fp8_e4m3:
      return store(address, float_to_fp8_e4m3_bits(value));
    case DType::int8:
      return store(address, saturating_round<std::int8_t>(value));
    case DType::int32:
      return store(address, saturating_round<std::int32_t>(value));
    case DType::int64:
      return store(address, saturating_round<std::int64_t>(value));
  }
  fail("invalid DType value {}", static_cast<int>(dtype));
}

}  // namespace attnrt
