// Fuzz target for the HTTP request framing of kvforge serve: any byte string
// as everything a client sends on one connection to a DeadlineServer (the
// server's head reader, framing check and cpp-httplib behind them). The
// server must not crash, and must answer at most one response per request
// that the bytes frame well, plus one refusal: a body, or the rest of a
// refused request, is never read as another request.
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
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

// How many requests the input frames well, counted by the rules the server
// states (http_framing.h), independently of how it reads them; a chunked body
// ends the count (its end is the server's to find), as does a refused head.
size_t well_framed_requests(std::string_view in) {
  size_t count = 0;
  while (true) {
    while (!in.empty() && (in.front() == '\r' || in.front() == '\n')) in.remove_prefix(1);
    const size_t end = request_head_end(in);
    if (end == std::string_view::npos) return count;
    const std::string_view head = in.substr(0, end);
    if (check_request_head(head)) return count;
    ++count;
    size_t body = 0;
    for (size_t at = 0; (at = head.find('\n', at)) != std::string_view::npos;) {
      ++at;
      std::string line(head.substr(at, head.find('\n', at) - at));
      for (char& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (line.rfind("transfer-encoding:", 0) == 0) return count;
      if (line.rfind("content-length:", 0) == 0)
        body = std::strtoull(line.c_str() + 15, nullptr, 10);
    }
    if (body > in.size() - end) return count;
    in.remove_prefix(end + body);
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
