#include "run/progress_line.h"

#include <fmt/format.h>
#include <unistd.h>

namespace attnrt::cli {

ProgressLine::ProgressLine(std::FILE* out) : ProgressLine(out, isatty(fileno(out)) != 0) {}

ProgressLine::ProgressLine(std::FILE* out, bool enabled)
    : out_(out), enabled_(enabled), start_(Clock::now()), last_draw_(start_) {}

void ProgressLine::update(const Engine& engine) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  const EngineStats& stats = engine.stats();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double tokens = static_cast<double>(stats.prefill_tokens + stats.decode_tokens);
  // \r and "erase to end of line": the line shrinks cleanly when numbers get shorter.
  fmt::print(out_, "\r\x1b[K  {}/{} requests done · {:.0f} tokens/s · KV blocks {}/{} in use",
             engine.num_finished(), engine.requests().size(), seconds > 0 ? tokens / seconds : 0.0,
             engine.num_kv_blocks_in_use(), engine.num_kv_blocks());
  std::fflush(out_);
}

void ProgressLine::finish() {
  if (!drawn_) return;
  fmt::print(out_, "\r\x1b[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace attnrt::cli
