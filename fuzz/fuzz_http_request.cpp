// Fuzz target for the HTTP request framing of kvforge serve: any byte string
// as everything a client sends on one connection to a DeadlineServer (the
// server's head reader, framing check and cpp-httplib behind them). The
// server must not crash, and must answer at most one response per request
// that the bytes frame well, plus one refusal: a body, or the rest of a
// refused request, is never read as another request.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "app/server/deadline_server.h"
#include "app/server/http_framing.h"

namespace {

using namespace kvforge::server;

DeadlineServer& server() {
  static DeadlineServer* const instance = [] {
    ReadDeadlines d;
    d.header = std::chrono::milliseconds(200);  // the input is all there: never wait long
    d.body_at_max = std::chrono::milliseconds(200);
    d.max_body_bytes = 1 << 16;
    auto* s = new DeadlineServer(d);
    s->set_read_timeout(0, 200'000);
    // Answers whose bodies cannot hold a status line, so responses are countable.
    s->Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("n=" + std::to_string(req.body.size()), "text/plain");
    });
    s->Get("/x", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("x", "text/plain");
    });
    if (s->bind_to_any_port("127.0.0.1") <= 0) std::abort();
    return s;
  }();
  return *instance;
}

// Where a chunked body at the start of `in` ends (RFC 9112 §7.1, trailers
// checked as field lines); npos when it is malformed or incomplete.
size_t chunked_body_end(std::string_view in) {
  size_t at = 0;
  std::string_view l;
  const auto next_line = [&] {
    const size_t crlf = in.find("\r\n", at);
    if (crlf == std::string_view::npos) return false;
    l = in.substr(at, crlf - at);
    at = crlf + 2;
    return l.find_first_of("\r\n") == std::string_view::npos;
  };
  while (true) {
    if (!next_line()) return std::string_view::npos;
    const std::string_view hex = l.substr(0, l.find_first_not_of("0123456789abcdefABCDEF"));
    if (hex.empty() || hex.size() > 15) return std::string_view::npos;
    const size_t size = std::stoull(std::string(hex), nullptr, 16);
    if (size == 0) break;
    if (in.size() - at < size + 2 || in.substr(at + size, 2) != "\r\n")
      return std::string_view::npos;
    at += size + 2;
  }
  while (true) {
    if (!next_line()) return std::string_view::npos;
    if (l.empty()) return at;
    if (field_line_problem(l)) return std::string_view::npos;
  }
}

// How many requests the input frames well, counted by the rules the server
// states (http_framing.h), independently of how it reads them; a refused
// head or body ends the count.
size_t well_framed_requests(std::string_view in) {
  size_t count = 0;
  while (true) {
    while (!in.empty() && (in.front() == '\r' || in.front() == '\n')) in.remove_prefix(1);
    const size_t end = request_head_end(in);
    if (end == std::string_view::npos) return count;
    BodyFraming framing;
    if (check_request_head(in.substr(0, end), &framing)) return count;
    ++count;
    in.remove_prefix(end);
    const size_t body = framing.chunked ? chunked_body_end(in) : framing.content_length.value_or(0);
    if (body == std::string_view::npos || body > in.size()) return count;
    in.remove_prefix(body);
  }
}

size_t responses(const std::string& out) {
  size_t n = 0;
  for (size_t at = 0; (at = out.find("HTTP/1.1 ", at)) != std::string::npos; at += 9) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  std::thread serve([&] { server().serve_accepted(fds[1]); });
  for (size_t sent = 0; sent < in.size();) {
    const ssize_t n = ::send(fds[0], in.data() + sent, in.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server closed: the rest is never read
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fds[0], SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  serve.join();
  ::close(fds[0]);
  if (responses(out) > well_framed_requests(in) + 1) std::abort();
  return 0;
}
