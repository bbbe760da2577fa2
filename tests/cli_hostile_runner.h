#pragma once
// Runs one HostileCase: a fresh directory, the config input it asks for, placeholders filled in,
// the `attnrt` binary spawned on it (ATTNRT_CLI_PATH), and the directory removed afterwards.

#include <chrono>
#include <string>
#include <vector>

#include "cli_hostile_cases.h"
#include "cli_process.h"

namespace attnrt::testing {

struct CaseRun {
  ProcessResult result;
  std::vector<std::string> args;      // as passed, placeholders filled in
  std::vector<std::string> culprits;  // likewise
};

CaseRun run_case(const HostileCase& c, std::chrono::seconds timeout = std::chrono::seconds(60));

// The properties of a rejected input (empty when all hold): exit status 2, nothing on stdout,
// exactly one line on stderr starting "attnrt: error: ", no control bytes, valid UTF-8, at most
// 8 KiB, naming every culprit.
std::vector<std::string> bad_input_violations(const CaseRun& run);

// "exit 2; stderr: ...; stdout: ..." for failure messages.
std::string describe_run(const CaseRun& run);

}  // namespace attnrt::testing
