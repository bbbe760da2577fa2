// parse_size / format_size: the byte sizes of cache.memory and of the CLI's output.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"

namespace attnrt {
namespace {

TEST(ParseSize, PlainIntegersAreBytes) {
  EXPECT_EQ(parse_size("1000000"), 1000000u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("  42  "), 42u);
}

TEST(ParseSize, BinaryUnitsArePowersOf1024) {
  EXPECT_EQ(parse_size("24GiB"), 24ull * 1024 * 1024 * 1024);  // 25769803776
  EXPECT_EQ(parse_size("512 MiB"), 536870912u);
  EXPECT_EQ(parse_size("1KiB"), 1024u);
  EXPECT_EQ(parse_size("2TiB"), 2199023255552u);
}

TEST(ParseSize, DecimalUnitsArePowersOf1000) {
  EXPECT_EQ(parse_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_size("3 KB"), 3000u);
  EXPECT_EQ(parse_size("5MB"), 5000000u);
  EXPECT_EQ(parse_size("1TB"), 1000000000000u);
  EXPECT_EQ(parse_size("7 B"), 7u);
}

TEST(ParseSize, UnitsAreCaseInsensitive) {
  EXPECT_EQ(parse_size("1gib"), 1073741824u);
  EXPECT_EQ(parse_size("1GIB"), 1073741824u);
  EXPECT_EQ(parse_size("1gb"), 1000000000u);
  EXPECT_EQ(parse_size("64mib"), 64u << 20);
}

TEST(ParseSize, FractionsAreExact) {
  EXPECT_EQ(parse_size("1.5GiB"), 1610612736u);  // 1.5 * 2^30
  EXPECT_EQ(parse_size("0.5KiB"), 512u);
  EXPECT_EQ(parse_size("2.25 MB"), 2250000u);
  EXPECT_EQ(parse_size("1.000"), 1u);
}

TEST(ParseSize, LargestValueFitsAndOneMoreOverflows) {
  EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);
  EXPECT_THROW(parse_size("18446744073709551616"), Error);
}

void expect_size_error(const std::string& text, const std::string& phrase) {
  try {
    parse_size(text);
    FAIL() << "parse_size(\"" << text << "\") did not throw";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("\"" + text + "\""), std::string::npos) << message;
    EXPECT_NE(message.find(phrase), std::string::npos) << message;
  }
}

TEST(ParseSize, ErrorsNameTheText) {
  expect_size_error("", "expected a number");
  expect_size_error("GiB", "expected a number");
  expect_size_error("-1GiB", "expected a number");
  expect_size_error("12 GiBs", "unknown unit \"GiBs\"");
  expect_size_error("4 G", "unknown unit \"G\"");
  expect_size_error("1.2.3GiB", "unknown unit");
  expect_size_error("1.5 B", "not a whole number of bytes");
  expect_size_error("99999999999 TiB", "too large");
  expect_size_error("123456789012345678901", "too many digits");
}

TEST(FormatSize, BelowOneKiBIsBytes) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(1000), "1000 B");
  EXPECT_EQ(format_size(1023), "1023 B");
}

TEST(FormatSize, PicksTheLargestBinaryUnit) {
  EXPECT_EQ(format_size(1024), "1 KiB");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_EQ(format_size(2147483648), "2 GiB");
  EXPECT_EQ(format_size(64ull << 20), "64 MiB");
  EXPECT_EQ(format_size(3ull << 40), "3 TiB");
  EXPECT_EQ(format_size(5120ull << 40), "5120 TiB");
}

TEST(FormatSize, RoundsToTwoDecimalsAndTrimsZeros) {
  EXPECT_EQ(format_size(1100), "1.07 KiB");           // 1.07421875
  EXPECT_EQ(format_size(1288490189), "1.2 GiB");      // 1.2000000002
  EXPECT_EQ(format_size(1034), "1.01 KiB");           // 1.009765625
  EXPECT_EQ(format_size(1025), "1 KiB");              // 1.0009765625
  EXPECT_EQ(format_size((1ull << 40) - 1), "1 TiB");  // 1023.999... GiB rounds up a unit
}

TEST(FormatSize, ExactSizesRoundTrip) {
  for (std::uint64_t bytes : {1536ull, 1ull << 30, 24ull << 30, 3ull << 19, 999ull}) {
    EXPECT_EQ(parse_size(format_size(bytes)), bytes) << format_size(bytes);
  }
}

}  // namespace
}  // namespace attnrt
