#include "app/cli/line_editor.h"

#include <editline/readline.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace kvforge::cli {
namespace {

// Written by the signal handler: lock-free so it is async-signal-safe.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

InterruptLatch::InterruptLatch() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &sa, &previous_);
}

InterruptLatch::~InterruptLatch() { sigaction(SIGINT, &previous_, nullptr); }

bool InterruptLatch::take() { return g_interrupted.exchange(false); }

LineEditor::LineEditor() : interactive_(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
  if (interactive_) {
    rl_readline_name = "kvforge";  // ~/.editrc sections: "kvforge:bind ..."
    using_history();
  }
}

LineEditor::~LineEditor() {
  if (interactive_) clear_history();
}

std::optional<std::string> LineEditor::read_line(const char* prompt, InterruptLatch& latch) {
  if (interactive_) {
    char* raw = readline(prompt);
    if (!raw) {
      // NULL: end of input, or Ctrl-C interrupted the read.
      if (g_interrupted.load()) {
        std::fputc('\n', stdout);
        return std::string();
      }
      return std::nullopt;
    }
    std::string line(raw);
    std::free(raw);
    return line;
  }
  std::fputs(prompt, stdout);
  std::fflush(stdout);
  std::string line;
  if (std::getline(std::cin, line)) return line;
  if (latch.take()) {
    std::cin.clear();
    std::fputc('\n', stdout);
    g_interrupted.store(true);  // the caller's take() sees it
    return std::string();
  }
  return std::nullopt;
}

void LineEditor::remember(const std::string& line) {
  if (interactive_ && !line.empty()) add_history(line.c_str());
}

}  // namespace kvforge::cli
