// printable(): echoed input stays one line of plain text; valid UTF-8 passes unchanged.

#include "attnrt/core/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace attnrt {
namespace {

using namespace std::string_literals;

TEST(PrintableTest, EscapesControlBytesDelAndBrokenUtf8) {
  EXPECT_EQ(printable("a\nb\tc"), "a\\nb\\tc");
  EXPECT_EQ(printable("x\x1b[31my"), "x\\x1b[31my");
  EXPECT_EQ(printable("nul\0end"s), "nul\\x00end");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(printable("bad\xff\xfe"), "bad\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                    // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
}

TEST(PrintableTest, KeepsValidUtf8AndCutsLongText) {
  EXPECT_EQ(printable("Gemma-3n · 日本語 🚀"), "Gemma-3n · 日本語 🚀");
  EXPECT_TRUE(is_printable("Gemma-3n · 日本語 🚀"));
  EXPECT_FALSE(is_printable("a\nb"));
  EXPECT_EQ(printable(std::string(10, 'x'), 4), "xxxx...");
}

}  // namespace
}  // namespace attnrt
