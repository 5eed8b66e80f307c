// Reading the user's lines in `kvforge chat`: on a terminal through libedit
// (arrow keys, Ctrl-A/E, history with Up/Down), otherwise plain lines from
// stdin so pipes and tests keep working. And Ctrl-C as llama-cli: while a
// reply streams it stops the reply; at the prompt it drops the line.
#pragma once

#include <csignal>
#include <optional>
#include <string>

namespace kvforge::cli {

// SIGINT latched into a flag for the lifetime of this object (the previous
// handler comes back after). Installed without SA_RESTART, so a blocking
// read returns and the caller looks at the flag.
class InterruptLatch {
 public:
  InterruptLatch();
  ~InterruptLatch();
  InterruptLatch(const InterruptLatch&) = delete;
  InterruptLatch& operator=(const InterruptLatch&) = delete;

  // Whether Ctrl-C came since the last call; clears it.
  bool take();

 private:
  struct sigaction previous_ {};
};

class LineEditor {
 public:
  // interactive: libedit on a terminal (stdin and stdout both ttys).
  LineEditor();
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  bool interactive() const { return interactive_; }
  // The next line without its newline; nullopt at end of input (Ctrl-D).
  // After Ctrl-C at the prompt: an empty line (latch.take() is then true).
  std::optional<std::string> read_line(const char* prompt, InterruptLatch& latch);
  // Kept for Up/Down on a terminal.
  void remember(const std::string& line);

 private:
  bool interactive_ = false;
};

}  // namespace kvforge::cli
