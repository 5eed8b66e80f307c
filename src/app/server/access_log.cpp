#include "app/server/access_log.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kvforge::server {
namespace {

thread_local RequestTrace t_trace;

double round_ms(double seconds) { return std::round(seconds * 1e4) / 10.0; }  // 0.1 ms resolution

}  // namespace

LogFormat parse_log_format(const std::string& name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  throw std::invalid_argument("--log-format: expected text or json, got '" + name + "'");
}

void begin_request_trace() {
  t_trace = RequestTrace{};
  t_trace.start = std::chrono::steady_clock::now();
}

void trace_prompt_tokens(int n) { t_trace.prompt_tokens = n; }

void trace_token() {
  if (!t_trace.first_token_seconds)
    t_trace.first_token_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_trace.start).count();
  ++t_trace.completion_tokens;
}

const RequestTrace& current_request_trace() { return t_trace; }

std::string format_access_line(const AccessRecord& r, LogFormat format) {
  const RequestTrace& t = r.trace;
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json j{{"remote", r.remote},
                             {"method", r.method},
                             {"path", r.path},
                             {"status", r.status},
                             {"prompt_tokens", t.prompt_tokens},
                             {"completion_tokens", t.completion_tokens},
                             {"ttft_ms", nullptr},
                             {"total_ms", round_ms(r.total_seconds)}};
    if (t.first_token_seconds) j["ttft_ms"] = round_ms(*t.first_token_seconds);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // logfmt-like: readable, and each figure greps as name=value.
  char buf[160];
  std::string line = r.remote + " \"" + r.method + " " + r.path + "\" " + std::to_string(r.status);
  if (t.prompt_tokens > 0 || t.completion_tokens > 0) {
    std::snprintf(buf, sizeof buf, " prompt=%d gen=%d", t.prompt_tokens, t.completion_tokens);
    line += buf;
  }
  if (t.first_token_seconds) {
    std::snprintf(buf, sizeof buf, " ttft=%.1fms", round_ms(*t.first_token_seconds));
    line += buf;
  }
  std::snprintf(buf, sizeof buf, " total=%.1fms", round_ms(r.total_seconds));
  return line + buf;
}

void AccessLog::write(const AccessRecord& r) {
  const std::string line = format_access_line(r, format_) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace kvforge::server
