#include "cli_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace attnrt::testing {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

using Clock = std::chrono::steady_clock;

// The parent's environment; under ASan the child also gets an RSS limit appended to
// ASAN_OPTIONS (later options win), so a runaway allocation ends the child, not the machine.
std::vector<std::string> child_environment(const ProcessLimits& limits) {
  std::vector<std::string> env;
  bool saw_asan_options = false;
  const std::string rss = "hard_rss_limit_mb=" + std::to_string(limits.memory_limit_mb);
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    if (kUnderAsan && text.rfind("ASAN_OPTIONS=", 0) == 0) {
      text += ":" + rss;
      saw_asan_options = true;
    }
    env.push_back(std::move(text));
  }
  if (kUnderAsan && !saw_asan_options) env.push_back("ASAN_OPTIONS=" + rss);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int out_fd, int err_fd,
                             std::size_t memory_limit_mb) {
  setpgid(0, 0);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
    _exit(126);
  }
  if (!kUnderAsan) {
    const rlim_t bytes = static_cast<rlim_t>(memory_limit_mb) << 20;
    const rlimit limit{bytes, bytes};
    setrlimit(RLIMIT_AS, &limit);
  }
  execve(argv[0], argv, envp);
  // Say why on the child's stderr, so a case does not read as the program's own exit 127.
  const char message[] = "cli_process: cannot execute ";
  ssize_t ignored = write(2, message, sizeof message - 1);
  ignored += write(2, argv[0], strlen(argv[0]));
  ignored += write(2, "\n", 1);
  (void)ignored;
  _exit(127);
}

struct Stream {
  int fd;
  std::string* text;
  bool* truncated;
};

// Reads whatever is ready; returns false at end of stream.
bool read_ready(Stream& stream, std::size_t max_capture) {
  std::array<char, 65536> buffer;
  const ssize_t n = read(stream.fd, buffer.data(), buffer.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  const std::size_t room = max_capture - std::min(max_capture, stream.text->size());
  const std::size_t kept = std::min(room, static_cast<std::size_t>(n));
  stream.text->append(buffer.data(), kept);
  if (kept < static_cast<std::size_t>(n)) *stream.truncated = true;
  return true;
}

// Drains both pipes until they close or the deadline passes; returns false on the deadline.
bool drain(std::array<Stream, 2>& streams, Clock::time_point deadline, std::size_t max_capture) {
  std::array<bool, 2> open = {true, true};
  while (open[0] || open[1]) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    std::array<pollfd, 2> fds{};
    for (int i = 0; i < 2; ++i) fds[i] = {open[i] ? streams[i].fd : -1, POLLIN, 0};
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    for (int i = 0; i < 2; ++i) {
      if (open[i] && fds[i].revents != 0) open[i] = read_ready(streams[i], max_capture);
    }
  }
  return true;
}

// Waits for the child until the deadline; returns false if it is still running then.
bool wait_until(pid_t pid, int& status, Clock::time_point deadline) {
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessLimits& limits) {
  std::vector<std::string> args = argv;
  std::vector<std::string> env = child_environment(limits);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0)
    exec_child(c_args.data(), c_env.data(), out_pipe[1], err_pipe[1], limits.memory_limit_mb);
  setpgid(pid, pid);  // also here, so the kill below reaches the group whoever runs first
  close(out_pipe[1]);
  close(err_pipe[1]);

  ProcessResult result;
  std::array<Stream, 2> streams = {Stream{out_pipe[0], &result.out, &result.out_truncated},
                                   Stream{err_pipe[0], &result.err, &result.err_truncated}};
  const auto deadline = start + limits.timeout;
  int status = 0;
  const bool finished =
      drain(streams, deadline, limits.max_capture) && wait_until(pid, status, deadline);
  if (!finished) {
    result.timed_out = true;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.signaled = WIFSIGNALED(status);
  if (result.signaled) result.signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string describe_status(const ProcessResult& result) {
  if (result.timed_out) {
    return "hung: killed after " + std::to_string(static_cast<int>(result.wall_seconds)) + " s";
  }
  if (result.signaled) {
    return "signal " + std::to_string(result.signal) + " (" + strsignal(result.signal) + ")";
  }
  return "exit " + std::to_string(result.exit_code);
}

std::string escape_bytes(const std::string& bytes, std::size_t limit) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') {
      text += "\\n";
    } else if (c == '\\') {
      text += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      text += static_cast<char>(c);
    } else {
      text += "\\x";
      text += kHex[c >> 4];
      text += kHex[c & 15];
    }
  }
  if (bytes.size() > limit) text += "... (" + std::to_string(bytes.size()) + " bytes)";
  return text;
}

}  // namespace attnrt::testing
