#include "attnrt/core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "attnrt/core/error.h"

namespace attnrt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

std::string error_of(DType (*parse)(std::string_view), std::string_view text) {
  try {
    parse(text);
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(DTypeTest, SizesNamesAndKinds) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::fp8_e4m3), 1u);
  EXPECT_EQ(dtype_size(DType::int8), 1u);
  EXPECT_EQ(dtype_size(DType::int32), 4u);
  EXPECT_EQ(dtype_size(DType::int64), 8u);
  EXPECT_EQ(dtype_name(DType::f32), "float32");
  EXPECT_EQ(dtype_name(DType::f16), "float16");
  EXPECT_EQ(dtype_name(DType::bf16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::fp8_e4m3), "fp8_e4m3");
  EXPECT_EQ(dtype_name(DType::int8), "int8");
  EXPECT_EQ(dtype_name(DType::int32), "int32");
  EXPECT_EQ(dtype_name(DType::int64), "int64");
  EXPECT_TRUE(is_floating(DType::f32));
  EXPECT_TRUE(is_floating(DType::f16));
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_TRUE(is_floating(DType::fp8_e4m3));
  EXPECT_FALSE(is_floating(DType::int8));
  EXPECT_FALSE(is_floating(DType::int32));
  EXPECT_FALSE(is_floating(DType::int64));
}

TEST(DTypeTest, ParseAcceptsCanonicalNamesAndAliases) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::int8,
                      DType::int32, DType::int64}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(parse_dtype("f32"), DType::f32);
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_EQ(parse_dtype("f16"), DType::f16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp8"), DType::fp8_e4m3);
  EXPECT_EQ(parse_dtype("fp8_e4m3"), DType::fp8_e4m3);
}

TEST(DTypeTest, ParseErrorNamesTheStringAndTheAcceptedNames) {
  const std::string message = error_of(&parse_dtype, "fp8_e5m2");
  EXPECT_NE(message.find("\"fp8_e5m2\""), std::string::npos) << message;
  for (const char* name : {"float32", "float16", "bfloat16", "fp8_e4m3", "int8", "int32", "int64",
                           "f32", "fp32", "f16", "half", "bf16", "fp8"}) {
    EXPECT_NE(message.find(name), std::string::npos) << name << " missing from: " << message;
  }
  EXPECT_THROW(parse_dtype(""), Error);
  EXPECT_THROW(parse_dtype("Float32"), Error);
}

TEST(Float16Test, EncodesKnownBitPatterns) {
  EXPECT_EQ(float_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_f16_bits(0.5f), 0x3800);
  EXPECT_EQ(float_to_f16_bits(0.1f), 0x2E66);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);  // tie with an odd mantissa: up to inf
  EXPECT_EQ(float_to_f16_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_f16_bits(1e6f), 0x7C00);
  EXPECT_EQ(float_to_f16_bits(kInf), 0x7C00);
  EXPECT_EQ(float_to_f16_bits(-kInf), 0xFC00);
  // Ties to even between 1.0 (0x3C00) and 1+2^-10 (0x3C01), and between 0x3C01 and 0x3C02.
  EXPECT_EQ(float_to_f16_bits(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(float_to_f16_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * 0x1p-11f - 0x1p-20f), 0x3C01);
}

TEST(Float16Test, EncodesSubnormals) {
  EXPECT_EQ(float_to_f16_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_f16_bits(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);             // tie: to even zero
  EXPECT_EQ(float_to_f16_bits(1.5f * 0x1p-25f), 0x0001);      // above half
  EXPECT_EQ(float_to_f16_bits(3 * 0x1p-25f), 0x0002);         // tie between 1 and 2
  EXPECT_EQ(float_to_f16_bits(5 * 0x1p-25f), 0x0002);         // tie between 2 and 3
  EXPECT_EQ(float_to_f16_bits(0x1p-14f - 0x1p-24f), 0x03FF);  // largest subnormal
  EXPECT_EQ(float_to_f16_bits(0x1p-14f), 0x0400);             // smallest normal
  EXPECT_EQ(float_to_f16_bits(0x1p-14f - 0x1p-25f), 0x0400);  // tie rounds up into normals
  EXPECT_EQ(float_to_f16_bits(1e-30f), 0x0000);
  EXPECT_EQ(float_to_f16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Float16Test, NaNStaysNaN) {
  EXPECT_EQ(float_to_f16_bits(kNaN), 0x7E00);
  EXPECT_EQ(float_to_f16_bits(-kNaN), 0xFE00);
  // A NaN whose payload lives only in the low bits must not turn into infinity.
  EXPECT_EQ(float_to_f16_bits(from_bits(0x7F80'0001u)), 0x7E00);
  EXPECT_TRUE(std::isnan(f16_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_bits_to_float(0x7C01)));
  EXPECT_TRUE(std::isnan(f16_bits_to_float(0xFFFF)));
}

TEST(Float16Test, DecodesKnownBitPatterns) {
  EXPECT_EQ(f16_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(f16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_bits_to_float(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(f16_bits_to_float(0x0400), 0x1p-14f);
  EXPECT_EQ(f16_bits_to_float(0x7C00), kInf);
  EXPECT_EQ(f16_bits_to_float(0xFC00), -kInf);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(f16_bits_to_float(0x8000)), 0x8000'0000u);
}

TEST(Float16Test, EveryNonNaNPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = f16_bits_to_float(half);
    if ((half & 0x7C00) == 0x7C00 && (half & 0x3FF) != 0) {
      ASSERT_TRUE(std::isnan(value)) << std::hex << bits;
      ASSERT_EQ(float_to_f16_bits(value) & 0x7E00, 0x7E00) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_f16_bits(value), half) << std::hex << bits;
    }
  }
}

// Between every pair of adjacent finite f16 values: the exact midpoint goes to the even code,
// one float ulp either side goes to the nearer one. Midpoints are exact in float (computed as
// low + half the gap, which cannot overflow).
TEST(Float16Test, EveryMidpointRoundsToNearestEven) {
  for (std::uint16_t low = 0; low < 0x7BFF; ++low) {
    const auto high = static_cast<std::uint16_t>(low + 1);
    const float mid =
        f16_bits_to_float(low) + (f16_bits_to_float(high) - f16_bits_to_float(low)) / 2;
    const std::uint16_t even = (low & 1) ? high : low;
    ASSERT_EQ(float_to_f16_bits(mid), even) << std::hex << low;
    ASSERT_EQ(float_to_f16_bits(-mid), even | 0x8000) << std::hex << low;
    ASSERT_EQ(float_to_f16_bits(std::nextafter(mid, 0.0f)), low) << std::hex << low;
    ASSERT_EQ(float_to_f16_bits(std::nextafter(mid, kInf)), high) << std::hex << low;
  }
}

#ifdef __FLT16_MAX__
// The compiler's own float -> _Float16 conversion is an independent reference.
TEST(Float16Test, MatchesCompilerConversionOnSampledFloats) {
  for (std::uint64_t bits = 0; bits <= 0xFFFF'FFFFu; bits += 4099) {
    const float value = from_bits(static_cast<std::uint32_t>(bits));
    if (std::isnan(value)) continue;
    const _Float16 reference = static_cast<_Float16>(value);
    ASSERT_EQ(float_to_f16_bits(value), std::bit_cast<std::uint16_t>(reference))
        << std::hex << bits;
  }
}
#endif

TEST(BFloat16Test, EncodesKnownBitPatterns) {
  EXPECT_EQ(float_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-1.0f), 0xBF80);
  EXPECT_EQ(float_to_bf16_bits(3.0f), 0x4040);
  EXPECT_EQ(float_to_bf16_bits(0.1f), 0x3DCD);  // 0x3DCCCCCD rounds up
  // Ties to even at the 16-bit cut.
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F80'8000u)), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F81'8000u)), 0x3F82);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F80'8001u)), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F81'7FFFu)), 0x3F81);
  // Largest finite float is past the last bf16 midpoint: it rounds to infinity.
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7F7F'7FFFu)), 0x7F7F);
  EXPECT_EQ(float_to_bf16_bits(kInf), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-kInf), 0xFF80);
  // Float subnormals keep their top bits.
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x0000'8000u)), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x0001'8000u)), 0x0002);
}

TEST(BFloat16Test, NaNStaysQuietNaN) {
  EXPECT_EQ(float_to_bf16_bits(kNaN), 0x7FC0);
  EXPECT_EQ(float_to_bf16_bits(-kNaN), 0xFFC0);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7F80'0001u)), 0x7FC0);  // not infinity
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7FFF'FFFFu)), 0x7FFF);  // no carry out of the NaN
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(0x7FC0)));
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(0x7F81)));
}

TEST(BFloat16Test, DecodesKnownBitPatterns) {
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0xC040), -3.0f);
  EXPECT_EQ(bf16_bits_to_float(0x7F80), kInf);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(bf16_bits_to_float(0x0001)), 0x0001'0000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(bf16_bits_to_float(0x8000)), 0x8000'0000u);
}

TEST(BFloat16Test, EveryNonNaNPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto value16 = static_cast<std::uint16_t>(bits);
    const float value = bf16_bits_to_float(value16);
    if (std::isnan(value)) {
      ASSERT_EQ(float_to_bf16_bits(value), value16 | 0x0040) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_bf16_bits(value), value16) << std::hex << bits;
    }
  }
}

TEST(BFloat16Test, EveryMidpointRoundsToNearestEven) {
  for (std::uint16_t low = 0; low < 0x7F7F; ++low) {
    const auto high = static_cast<std::uint16_t>(low + 1);
    const float mid =
        bf16_bits_to_float(low) + (bf16_bits_to_float(high) - bf16_bits_to_float(low)) / 2;
    const std::uint16_t even = (low & 1) ? high : low;
    ASSERT_EQ(float_to_bf16_bits(mid), even) << std::hex << low;
    ASSERT_EQ(float_to_bf16_bits(-mid), even | 0x8000) << std::hex << low;
    ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, 0.0f)), low) << std::hex << low;
    ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, kInf)), high) << std::hex << low;
  }
  // The midpoint above the largest finite bf16 (odd mantissa) rounds to infinity.
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7F7F'8000u)), 0x7F80);
}

TEST(Fp8E4M3Test, EncodesKnownBitPatterns) {
  EXPECT_EQ(float_to_fp8_e4m3_bits(0.0f), 0x00);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-0.0f), 0x80);
  EXPECT_EQ(float_to_fp8_e4m3_bits(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-1.0f), 0xB8);
  EXPECT_EQ(float_to_fp8_e4m3_bits(240.0f), 0x77);
  EXPECT_EQ(float_to_fp8_e4m3_bits(0.1f), 0x1D);  // 1.6 * 2^-4 -> mantissa 4.8 -> 5
  EXPECT_EQ(float_to_fp8_e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-448.0f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3_bits(0x1p-6f), 0x08);  // smallest normal
  // Ties to even among normals: 1.0 | 1.125 | 1.25.
  EXPECT_EQ(float_to_fp8_e4m3_bits(1.0625f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3_bits(1.1875f), 0x3A);
  EXPECT_EQ(float_to_fp8_e4m3_bits(1.0625f + 0x1p-20f), 0x39);
}

TEST(Fp8E4M3Test, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(float_to_fp8_e4m3_bits(449.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3_bits(464.0f), 0x7E);  // would be the tie to the NaN code
  EXPECT_EQ(float_to_fp8_e4m3_bits(1e9f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-1e9f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3_bits(kInf), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-kInf), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3_bits(std::numeric_limits<float>::max()), 0x7E);
}

TEST(Fp8E4M3Test, EncodesSubnormals) {
  EXPECT_EQ(float_to_fp8_e4m3_bits(0x1p-9f), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-0x1p-9f), 0x81);
  EXPECT_EQ(float_to_fp8_e4m3_bits(0x1p-10f), 0x00);       // tie: to even zero
  EXPECT_EQ(float_to_fp8_e4m3_bits(-0x1p-10f), 0x80);      // and keeps its sign
  EXPECT_EQ(float_to_fp8_e4m3_bits(3 * 0x1p-10f), 0x02);   // tie between 1 and 2
  EXPECT_EQ(float_to_fp8_e4m3_bits(5 * 0x1p-10f), 0x02);   // tie between 2 and 3
  EXPECT_EQ(float_to_fp8_e4m3_bits(7 * 0x1p-9f), 0x07);    // largest subnormal
  EXPECT_EQ(float_to_fp8_e4m3_bits(15 * 0x1p-10f), 0x08);  // tie rounds up into normals
  EXPECT_EQ(float_to_fp8_e4m3_bits(1e-6f), 0x00);
}

TEST(Fp8E4M3Test, NaNIsTheOnlyNaNCode) {
  EXPECT_EQ(float_to_fp8_e4m3_bits(kNaN), 0x7F);
  EXPECT_EQ(float_to_fp8_e4m3_bits(-kNaN), 0xFF);
  EXPECT_TRUE(std::isnan(fp8_e4m3_bits_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_bits_to_float(0xFF)));
}

TEST(Fp8E4M3Test, DecodesKnownBitPatterns) {
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0xFE), -448.0f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x77), 240.0f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x78), 256.0f);  // exponent 15 is finite in e4m3fn
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x01), 0x1p-9f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x07), 7 * 0x1p-9f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x08), 0x1p-6f);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(fp8_e4m3_bits_to_float(0x80)), 0x8000'0000u);
}

TEST(Fp8E4M3Test, EveryPatternRoundTrips) {
  for (unsigned bits = 0; bits <= 0xFF; ++bits) {
    const auto code = static_cast<std::uint8_t>(bits);
    ASSERT_EQ(float_to_fp8_e4m3_bits(fp8_e4m3_bits_to_float(code)), code) << std::hex << bits;
  }
}

TEST(Fp8E4M3Test, EveryMidpointRoundsToNearestEven) {
  for (std::uint8_t low = 0; low < 0x7E; ++low) {
    const auto high = static_cast<std::uint8_t>(low + 1);
    const float mid = fp8_e4m3_bits_to_float(low) +
                      (fp8_e4m3_bits_to_float(high) - fp8_e4m3_bits_to_float(low)) / 2;
    const std::uint8_t even = (low & 1) ? high : low;
    ASSERT_EQ(float_to_fp8_e4m3_bits(mid), even) << std::hex << int{low};
    ASSERT_EQ(float_to_fp8_e4m3_bits(-mid), even | 0x80) << std::hex << int{low};
    ASSERT_EQ(float_to_fp8_e4m3_bits(std::nextafter(mid, 0.0f)), low) << std::hex << int{low};
    ASSERT_EQ(float_to_fp8_e4m3_bits(std::nextafter(mid, kInf)), high) << std::hex << int{low};
  }
}

template <typename T>
T stored(DType dtype, float value) {
  std::byte bytes[sizeof(T)] = {};
  store_from_float(dtype, bytes, value);
  T result;
  std::memcpy(&result, bytes, sizeof(T));
  return result;
}

template <typename T>
float loaded(DType dtype, T value) {
  std::byte bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  return load_as_float(dtype, bytes);
}

TEST(LoadStoreTest, FloatingDTypesUseTheirEncodings) {
  EXPECT_EQ(stored<float>(DType::f32, 1.25f), 1.25f);
  EXPECT_EQ(stored<std::uint16_t>(DType::f16, 1.0f), 0x3C00);
  EXPECT_EQ(stored<std::uint16_t>(DType::bf16, 1.0f), 0x3F80);
  EXPECT_EQ(stored<std::uint8_t>(DType::fp8_e4m3, 1000.0f), 0x7E);
  EXPECT_EQ(loaded<float>(DType::f32, -3.5f), -3.5f);
  EXPECT_EQ(loaded<std::uint16_t>(DType::f16, 0x7BFF), 65504.0f);
  EXPECT_EQ(loaded<std::uint16_t>(DType::bf16, 0xC040), -3.0f);
  EXPECT_EQ(loaded<std::uint8_t>(DType::fp8_e4m3, 0x38), 1.0f);
}

TEST(LoadStoreTest, IntegersConvertByValueRoundingToNearestEven) {
  EXPECT_EQ(loaded<std::int8_t>(DType::int8, -5), -5.0f);
  EXPECT_EQ(loaded<std::int32_t>(DType::int32, 123456), 123456.0f);
  EXPECT_EQ(loaded<std::int64_t>(DType::int64, std::int64_t{1} << 40), 0x1p40f);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, 2.5f), 2);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, 3.5f), 4);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, -2.5f), -2);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, 3.6f), 4);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, -3.4f), -3);
  EXPECT_EQ(stored<std::int32_t>(DType::int32, 7.6f), 8);
  EXPECT_EQ(stored<std::int64_t>(DType::int64, -3.5f), -4);
  EXPECT_EQ(stored<std::int64_t>(DType::int64, 0x1p40f), std::int64_t{1} << 40);
}

TEST(LoadStoreTest, IntegersSaturateAndStoreNaNAsZero) {
  EXPECT_EQ(stored<std::int8_t>(DType::int8, 127.4f), 127);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, 127.5f), 127);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, 200.0f), 127);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, -128.0f), -128);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, -200.0f), -128);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, kInf), 127);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, -kInf), -128);
  EXPECT_EQ(stored<std::int8_t>(DType::int8, kNaN), 0);
  EXPECT_EQ(stored<std::int32_t>(DType::int32, 1e10f), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(stored<std::int32_t>(DType::int32, -1e10f), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(stored<std::int64_t>(DType::int64, 1e30f), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(stored<std::int64_t>(DType::int64, kNaN), 0);
}

}  // namespace
}  // namespace attnrt
