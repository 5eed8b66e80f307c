// A progress line on stderr. On a terminal it is redrawn in place ("\r");
// when stderr is a file or pipe (logs, CI) carriage returns would pile every
// update onto one enormous line, so there it prints a plain line at most
// every few seconds, and the final state once.
#pragma once

#include <chrono>
#include <string>

namespace kvforge::cli {

class ProgressLine {
 public:
  // log_interval: seconds between lines when stderr is not a terminal.
  explicit ProgressLine(double log_interval = 5.0);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine();

  // printf-style text of the current state.
  void update(const char* format, ...) __attribute__((format(printf, 2, 3)));
  // Ends the line with the last state shown (idempotent; the destructor calls it).
  void finish();

 private:
  bool terminal_;
  double log_interval_;
  std::chrono::steady_clock::time_point last_log_;
  std::string last_;      // latest state
  bool shown_ = false;    // the latest state is on screen / in the log
  bool pending_ = false;  // something was drawn and not yet ended (terminal)
};

}  // namespace kvforge::cli
