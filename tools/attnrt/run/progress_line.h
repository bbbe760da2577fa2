#pragma once
// A live progress line for `attnrt run` on stderr: requests done, tokens per second and KV cache
// blocks in use, rewritten in place at most ten times a second, and only when stderr is a
// terminal (logs and pipes stay clean).

#include <chrono>
#include <cstdio>

#include "attnrt/engine/engine.h"

namespace attnrt::cli {

class ProgressLine {
 public:
  // Enabled when `out` is a terminal.
  explicit ProgressLine(std::FILE* out = stderr);
  ProgressLine(std::FILE* out, bool enabled);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { finish(); }

  bool enabled() const { return enabled_; }
  // Redraws the line if the last draw is at least 100 ms old.
  void update(const Engine& engine);
  // Erases the line, so that what follows starts on a clean row.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;

  std::FILE* out_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace attnrt::cli
