#include "cli_hostile_runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace attnrt::testing {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxErrorBytes = 8192;
constexpr std::string_view kErrorPrefix = "attnrt: error: ";

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class CaseDir {
 public:
  CaseDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attnrt-hostile-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~CaseDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  CaseDir(const CaseDir&) = delete;
  CaseDir& operator=(const CaseDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw std::runtime_error("cannot write " + path.string());
}

// 64 MiB of spaces, then bytes that are no JSON at all.
void write_huge_garbage(const fs::path& path) {
  std::ofstream file(path, std::ios::binary);
  const std::string spaces(1 << 20, ' ');
  for (int i = 0; i < 64; ++i)
    file.write(spaces.data(), static_cast<std::streamsize>(spaces.size()));
  file << "garbage }{ \x01\x02";
  if (!file) throw std::runtime_error("cannot write " + path.string());
}

void prepare_input(const HostileCase& c, const fs::path& config) {
  switch (c.input) {
    case ConfigInput::none:
      return;
    case ConfigInput::text:
      return write_file(config, c.config);
    case ConfigInput::directory:
      fs::create_directory(config);
      return;
    case ConfigInput::below_file:
      return write_file(config, "{}");
    case ConfigInput::fifo:
      if (mkfifo(config.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
      return;
    case ConfigInput::huge_garbage:
      return write_huge_garbage(config);
  }
}

std::string substitute(std::string text, const std::string& config, const std::string& dir) {
  for (const auto& [key, value] :
       {std::pair{std::string("{CONFIG}"), config}, std::pair{std::string("{DIR}"), dir}}) {
    for (std::size_t pos = text.find(key); pos != std::string::npos;
         pos = text.find(key, pos + value.size())) {
      text.replace(pos, key.size(), value);
    }
  }
  return text;
}

// Bytes a terminal acts on: C0 controls other than the final newline, DEL.
bool has_control_bytes(const std::string& line) {
  for (const char ch : line) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

bool is_valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    std::uint32_t code = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2, code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (text.size() - i <= extra) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    const bool overlong = (extra == 2 && code < 0x800) || (extra == 3 && code < 0x10000);
    if (overlong || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return false;
    i += extra + 1;
  }
  return true;
}

bool names_one_of(const std::string& err, const std::string& alternatives) {
  for (std::size_t start = 0;;) {
    const std::size_t bar = alternatives.find('|', start);
    const std::string option = alternatives.substr(start, bar - start);
    if (!option.empty() && err.find(option) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    start = bar + 1;
  }
}

}  // namespace

CaseRun run_case(const HostileCase& c, std::chrono::seconds timeout) {
  const CaseDir dir;
  const fs::path config = dir.path() / "config.json";
  prepare_input(c, config);
  CaseRun run;
  std::vector<std::string> argv = {ATTNRT_CLI_PATH};
  for (const std::string& arg : c.args) {
    run.args.push_back(substitute(arg, config.string(), dir.path().string()));
    argv.push_back(run.args.back());
  }
  for (const std::string& culprit : c.culprits) {
    run.culprits.push_back(substitute(culprit, config.string(), dir.path().string()));
  }
  ProcessLimits limits;
  limits.timeout = timeout;
  run.result = run_process(argv, limits);
  return run;
}

std::vector<std::string> bad_input_violations(const CaseRun& run) {
  const ProcessResult& r = run.result;
  std::vector<std::string> problems;
  if (r.timed_out) return {"hangs (" + describe_status(r) + ")"};
  if (r.signaled) problems.push_back("crashes (" + describe_status(r) + ")");
  if (!r.signaled && r.exit_code != 2)
    problems.push_back("exit code " + std::to_string(r.exit_code) + ", not 2");
  if (!r.out.empty())
    problems.push_back("writes " + std::to_string(r.out.size()) + " bytes to stdout");
  const std::string& err = r.err;
  const std::size_t newlines = static_cast<std::size_t>(std::count(err.begin(), err.end(), '\n'));
  if (err.empty() || err.back() != '\n' || newlines != 1) {
    problems.push_back("stderr is " + std::to_string(newlines) +
                       " newline-terminated line(s), not 1");
  }
  if (err.rfind(kErrorPrefix, 0) != 0)
    problems.push_back("stderr does not start with \"attnrt: error: \"");
  const std::string line = err.empty() || err.back() != '\n' ? err : err.substr(0, err.size() - 1);
  if (has_control_bytes(line)) problems.push_back("stderr echoes control bytes");
  if (!is_valid_utf8(err)) problems.push_back("stderr is not valid UTF-8");
  if (err.size() > kMaxErrorBytes)
    problems.push_back("stderr is " + std::to_string(err.size()) + " bytes");
  for (const std::string& culprit : run.culprits) {
    if (!names_one_of(err, culprit))
      problems.push_back("stderr does not name " + escape_bytes(culprit, 120));
  }
  return problems;
}

std::string describe_run(const CaseRun& run) {
  std::string args;
  for (const std::string& arg : run.args) args += " '" + escape_bytes(arg, 120) + "'";
  return describe_status(run.result) + " after " + std::to_string(run.result.wall_seconds) +
         " s\n  argv: attnrt" + args + "\n  stderr: " + escape_bytes(run.result.err, 600) +
         "\n  stdout: " + escape_bytes(run.result.out, 200);
}

}  // namespace attnrt::testing
