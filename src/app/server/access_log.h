// One line per HTTP request on stderr, as web servers write: method, path,
// status, prompt and generated tokens, time to first token, total time.
// Text for people, or one JSON object per line (--log-format json) for
// machines.
//
// cpp-httplib serves a request on one thread from routing to its logger
// (streamed bodies included), so the tokens and the first-token time are
// gathered in a RequestTrace of that thread: begin_request_trace() at
// routing, trace_*() from the completion code, the logger reads it.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace kvforge::server {

enum class LogFormat { kText, kJson };
// "text" or "json"; throws std::invalid_argument naming --log-format otherwise.
LogFormat parse_log_format(const std::string& name);

struct RequestTrace {
  std::chrono::steady_clock::time_point start;
  std::optional<double> first_token_seconds;  // set by the first generated token
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// The trace of the request this thread serves.
void begin_request_trace();
void trace_prompt_tokens(int n);
void trace_token();  // a generated token: the first sets the time to first token
const RequestTrace& current_request_trace();

struct AccessRecord {
  std::string remote;  // client address
  std::string method;
  std::string path;
  int status = 0;
  RequestTrace trace;
  double total_seconds = 0;
};

// 127.0.0.1 "POST /v1/chat/completions" 200 prompt=12 gen=34 ttft=5.1ms total=81.0ms, or
// {"remote":...,"method":...,"path":...,"status":200,"prompt_tokens":12,
//  "completion_tokens":34,"ttft_ms":5.1,"total_ms":81.0} (ttft_ms null without tokens).
std::string format_access_line(const AccessRecord& r, LogFormat format);

class AccessLog {
 public:
  AccessLog(LogFormat format, std::FILE* out) : format_(format), out_(out) {}
  // Thread-safe: whole lines, never interleaved.
  void write(const AccessRecord& r);

 private:
  LogFormat format_;
  std::FILE* out_;
  std::mutex mu_;
};

}  // namespace kvforge::server
