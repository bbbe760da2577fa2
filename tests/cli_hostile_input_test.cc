// `attnrt` as a black box on hostile input. Every BAD input must exit with code 2 (not a signal,
// not a hang), print nothing on stdout and exactly one line on stderr that starts
// "attnrt: error: ", names the culprit (a JSON path, an option, a file) and echoes no control
// bytes. The cases (tests/cli_hostile_cases_*.cc) are grouped in classes, one suite each, so
// CTest lists every case and the count per class. ExtremeValid (cli_hostile_extreme.cc) holds
// the inputs at the edges of the documented ranges, which must succeed.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "cli_hostile_runner.h"

namespace attnrt::testing {
namespace {

// Class lists with names made unique (a repeated name would abort gtest's registration).
std::vector<HostileCase> named(std::vector<HostileCase> cases) {
  std::map<std::string, int> seen;
  for (HostileCase& c : cases) {
    c.name = identifier(c.name);
    if (const int n = seen[c.name]++; n > 0) c.name += fmt::format("_{}", n + 1);
  }
  return cases;
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : "; ") + item;
  return text;
}

std::vector<HostileCase> joined(std::vector<HostileCase> a, std::vector<HostileCase> b) {
  a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
  return a;
}

class BadInput : public ::testing::TestWithParam<HostileCase> {};

TEST_P(BadInput, ExitsTwoWithOneLineNamingTheCulprit) {
  const CaseRun run = run_case(GetParam());
  const std::vector<std::string> problems = bad_input_violations(run);
  if (std::getenv("ATTNRT_HOSTILE_SHOW") != nullptr) {  // to review the messages themselves
    std::cout << "[ stderr   ] " << GetParam().name << ": " << escape_bytes(run.result.err, 400)
              << "\n";
  }
  if (!problems.empty()) {
    ADD_FAILURE() << "HOSTILE-FAIL " << GetParam().name << ": " << joined(problems) << "\n  "
                  << describe_run(run);
  }
}

std::string case_name(const ::testing::TestParamInfo<HostileCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(
    WrongType, BadInput,
    ::testing::ValuesIn(named(joined(wrong_type_cases(), structure_type_cases()))), case_name);
INSTANTIATE_TEST_SUITE_P(UnknownKey, BadInput, ::testing::ValuesIn(named(unknown_key_cases())),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Range, BadInput, ::testing::ValuesIn(named(range_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(AcceptedWrong, BadInput,
                         ::testing::ValuesIn(named(accepted_wrong_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(Crash, BadInput, ::testing::ValuesIn(named(crash_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(Hang, BadInput, ::testing::ValuesIn(named(hang_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(Files, BadInput, ::testing::ValuesIn(named(files_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(Cli, BadInput, ::testing::ValuesIn(named(cli_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(HfImport, BadInput, ::testing::ValuesIn(named(hf_cases())), case_name);
INSTANTIATE_TEST_SUITE_P(Encoding, BadInput, ::testing::ValuesIn(named(encoding_cases())),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Unclear, BadInput, ::testing::ValuesIn(named(unclear_cases())), case_name);

// The mutation bases are valid, so each mutated case fails for its one change.
TEST(HostileInputBaseline, MutationBasesPlan) {
  std::vector<std::pair<std::string, std::string>> bases = {
      {"kitchen_sink", kitchen_sink().dump()}, {"small_config", small_config().dump()}};
  for (const std::string& example : example_names())
    bases.emplace_back(example, example_text(example));
  for (const auto& [name, text] : bases) {
    const CaseRun run = run_case({name, {"plan", "{CONFIG}"}, ConfigInput::text, text, {}});
    EXPECT_EQ(run.result.exit_code, 0) << name << ": " << describe_run(run);
  }
}

// The process harness itself: a hang is reported as one, and output is captured in full.
TEST(HostileInputBaseline, HarnessReportsHangsAndCapturesOutput) {
  ProcessLimits limits;
  limits.timeout = std::chrono::seconds(1);
  const ProcessResult hung = run_process({"/bin/sh", "-c", "sleep 30"}, limits);
  EXPECT_TRUE(hung.timed_out);
  EXPECT_LT(hung.wall_seconds, 10.0);
  const ProcessResult printed =
      run_process({"/bin/sh", "-c", "head -c 1000000 /dev/zero; echo oops >&2; exit 3"});
  EXPECT_EQ(printed.exit_code, 3);
  EXPECT_EQ(printed.out.size(), 1000000u);
  EXPECT_EQ(printed.err, "oops\n");
  const ProcessResult missing = run_process({"/nonexistent/attnrt", "plan"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("cannot execute /nonexistent/attnrt"), std::string::npos);
}

}  // namespace
}  // namespace attnrt::testing
