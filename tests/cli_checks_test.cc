// The CLI's validators and command-word checks: one line, plain numbers, the culprit named.

#include "cli_checks.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "command_names.h"
#include "commands.h"
#include "error_of.h"

namespace attnrt::cli {
namespace {

using attnrt::testing::error_of;

std::string check(const CLI::Validator& validator, std::string text) {
  return validator(text);
}

TEST(CliChecksTest, IntegerRangesInPlainNumbers) {
  const CLI::Validator requests = integer_in(0, 100000);
  EXPECT_EQ(check(requests, "64"), "");
  EXPECT_EQ(check(requests, "0"), "");
  EXPECT_EQ(check(requests, "2147483647"), "\"2147483647\" is not an integer from 0 to 100000");
  EXPECT_EQ(check(requests, "-3"), "\"-3\" is not an integer from 0 to 100000");
  EXPECT_EQ(check(requests, "1e3"), "\"1e3\" is not an integer from 0 to 100000");
  EXPECT_EQ(check(requests, ""), "\"\" is not an integer from 0 to 100000");
  EXPECT_EQ(check(number_in(0.0, 3600.0), "0.5"), "");
  EXPECT_EQ(check(number_in(0.0, 3600.0), "inf"), "\"inf\" is not a number from 0 to 3600");
}

TEST(CliChecksTest, ChoicesSuggestTheNearestName) {
  static constexpr std::array<std::string_view, 2> kOnOff = {"on", "off"};
  const CLI::Validator on_off = one_of(kOnOff, "on or off");
  EXPECT_EQ(check(on_off, "on"), "");
  EXPECT_EQ(check(on_off, "of"), "\"of\" is not on or off; did you mean on? (one of on, off)");
  EXPECT_EQ(check(on_off, "a\x1b"), "\"a\\x1b\" is not on or off; use one of on, off");
  EXPECT_EQ(check(non_empty(), ""), "must not be empty");
}

TEST(CliChecksTest, SeedsAreUnsignedDecimal) {
  EXPECT_EQ(parse_unsigned("--seed", "18446744073709551615"), 18446744073709551615ull);
  EXPECT_EQ(error_of([] { parse_unsigned("--seed", "-1"); }),
            "--seed: \"-1\" is not an integer from 0 to 18446744073709551615");
  EXPECT_NE(error_of([] { parse_unsigned("--seed", "18446744073709551616"); }).find("--seed: "),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_unsigned("--seed", " 1"); }).find("--seed: "), std::string::npos);
}

TEST(CliChecksTest, UnknownCommandsAreNamedWithTheClosestOne) {
  CLI::App app;
  add_plan_command(app);
  add_run_command(app);
  add_bench_command(app);
  const auto error_for = [&](std::vector<const char*> args) {
    args.insert(args.begin(), "attnrt");
    return error_of([&] { check_command_names(app, static_cast<int>(args.size()), args.data()); });
  };
  EXPECT_EQ(error_for({"plna"}), "unknown command \"plna\" for \"attnrt\"; did you mean \"plan\"?");
  EXPECT_EQ(error_for({"bench", "atention"}),
            "unknown command \"atention\" for \"attnrt bench\"; did you mean \"attention\"?");
  EXPECT_EQ(error_for({"zzzzzz"}),
            "unknown command \"zzzzzz\" for \"attnrt\"; the commands are plan, run, bench");
  EXPECT_EQ(error_for({}), "\"attnrt\" needs a command: one of plan, run, bench");
  EXPECT_EQ(error_for({"plan", "x.json"}), "(no error)");
  EXPECT_EQ(error_for({"--help"}), "(no error)");
}

TEST(CliChecksTest, MessagesBecomeOneLine) {
  EXPECT_EQ(one_line("first\nsecond\n"), "first; second");
  EXPECT_EQ(one_line("tab\there\x1b"), "tab\\there\\x1b");
}

}  // namespace
}  // namespace attnrt::cli
