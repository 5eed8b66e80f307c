#include "app/cli/progress_line.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace kvforge::cli {

ProgressLine::ProgressLine(double log_interval)
    : terminal_(isatty(STDERR_FILENO) == 1),
      log_interval_(log_interval),
      last_log_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  last_ = buf;
  shown_ = false;
  if (terminal_) {
    std::fprintf(stderr, "\r%s", buf);
    pending_ = shown_ = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_log_).count() >= log_interval_) {
    std::fprintf(stderr, "%s\n", buf);
    last_log_ = now;
    shown_ = true;
  }
}

void ProgressLine::finish() {
  if (terminal_) {
    if (pending_) std::fputc('\n', stderr);
  } else if (!shown_ && !last_.empty()) {
    std::fprintf(stderr, "%s\n", last_.c_str());
  }
  pending_ = false;
  shown_ = true;
}

}  // namespace kvforge::cli
