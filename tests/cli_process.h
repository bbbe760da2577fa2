#pragma once
// Runs a program as a child process, the way a shell would, and captures what it did: its exit
// status (or the signal that ended it), every byte of stdout and stderr, and its wall time.
// A child that outlives its deadline is killed with its whole process group and reported as hung.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace attnrt::testing {

struct ProcessResult {
  bool timed_out = false;  // killed at the deadline
  bool signaled = false;   // ended by a signal (a crash, or our kill at the deadline)
  int exit_code = -1;      // valid when !signaled
  int signal = 0;          // valid when signaled
  std::string out;         // stdout, at most ProcessLimits::max_capture bytes
  std::string err;         // stderr, likewise
  bool out_truncated = false;
  bool err_truncated = false;
  double wall_seconds = 0;
};

struct ProcessLimits {
  std::chrono::seconds timeout{60};
  // Bytes kept of each stream; the rest is read and dropped, so a chatty child never blocks.
  std::size_t max_capture = std::size_t{256} << 20;
  // Address-space limit of the child in release builds (under ASan: an RSS limit instead, since
  // the sanitizer reserves terabytes of shadow memory). Keeps a runaway allocation from taking
  // the machine down with it.
  std::size_t memory_limit_mb = 4096;
};

// Runs `argv[0]` (a path, not searched in PATH) with `argv`, stdin from /dev/null, the parent's
// environment. Throws std::runtime_error only when the child cannot be started at all.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessLimits& limits = {});

// "exit 2", "signal 11 (Segmentation fault)", "hung: killed after 60 s".
std::string describe_status(const ProcessResult& result);

// `bytes` with every byte outside printable ASCII written as \xNN (and \n as \n), cut to `limit`.
std::string escape_bytes(const std::string& bytes, std::size_t limit = 2000);

}  // namespace attnrt::testing
