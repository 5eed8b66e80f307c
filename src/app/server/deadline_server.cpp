#include "app/server/deadline_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "app/server/deadline_stream.h"

namespace kvforge::server {
namespace {

using std::chrono::milliseconds;

// The connection the calling thread serves, and which part of its current
// request is being read.
struct ServedConnection {
  DeadlineStream* stream = nullptr;
  bool reading_body = false;
  milliseconds allowed{0};  // for the part being read
  size_t max_header_bytes = 0;
  size_t max_body_bytes = 0;
};
thread_local ServedConnection tl_served;

std::string seconds_text(milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000);
  return buf;
}

// Content-Length of a request; nullopt when absent or unreadable.
std::optional<size_t> declared_body_bytes(const httplib::Request& req) {
  if (!req.has_header("Content-Length")) return std::nullopt;
  const std::string text = req.get_header_value("Content-Length");
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') return std::nullopt;
  return static_cast<size_t>(n);
}

// After answering a request whose rest is still coming: stops writing, then
// reads and drops what the client still sends until it closes too (or a
// second passes). Closing with unread bytes would reset the connection, and
// the client could lose the answer before reading it.
void linger(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  char scratch[4096];
  while (true) {
    const auto left = std::chrono::ceil<milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    const ssize_t n = ::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
  }
}

}  // namespace

milliseconds ReadDeadlines::body(size_t content_length) const {
  const double share =
      max_body_bytes == 0
          ? 1.0
          : static_cast<double>(std::min(content_length, max_body_bytes)) / max_body_bytes;
  const auto scaled = milliseconds(static_cast<int64_t>(share * body_at_max.count()));
  return std::max(header, scaled);
}

// The headers are in: the body gets its own deadline, and a byte limit where
// cpp-httplib 0.11 has none. It enforces --max-body on a Content-Length (413),
// but reads a chunked body, or one without a length (until the client
// closes), whole into memory. Chunk framing may double the bytes of a body.
DeadlineServer::BodyLimit DeadlineServer::body_limit(const httplib::Request& req) const {
  const std::optional<size_t> declared = declared_body_bytes(req);
  if (declared && *declared > deadlines_.max_body_bytes)
    return {deadlines_.header, 0};  // 413 without reading what httplib would skip
  if (declared) return {deadlines_.body(*declared), SIZE_MAX};
  const bool chunked = !req.get_header_value("Transfer-Encoding").empty();
  return {deadlines_.body(deadlines_.max_body_bytes),
          chunked ? 2 * deadlines_.max_body_bytes : deadlines_.max_body_bytes};
}

std::optional<std::pair<int, std::string>> DeadlineServer::read_stop() {
  const ServedConnection& c = tl_served;
  if (!c.stream || c.stream->stop() == DeadlineStream::Stop::kNone) return std::nullopt;
  if (c.stream->stop() == DeadlineStream::Stop::kTooLarge && c.reading_body)
    return std::pair{413,
                     "the request body exceeds " + std::to_string(c.max_body_bytes) + " bytes"};
  if (c.stream->stop() == DeadlineStream::Stop::kTooLarge)
    return std::pair{431, "the request line and headers exceed " +
                              std::to_string(c.max_header_bytes) + " bytes"};
  return std::pair{408, (c.reading_body ? "the request body did not arrive within "
                                        : "the request line and headers did not arrive within ") +
                            seconds_text(c.allowed)};
}

int DeadlineServer::current_socket() { return tl_served.stream ? tl_served.stream->socket() : -1; }

std::string DeadlineServer::current_remote_address() {
  std::string ip;
  int port = 0;
  if (tl_served.stream) tl_served.stream->get_remote_ip_and_port(ip, port);
  return ip;
}

int DeadlineServer::break_connections() {
  std::lock_guard<std::mutex> lock(open_mutex_);
  int broken = 0;
  for (int fd : open_)
    if (::shutdown(fd, SHUT_RDWR) == 0) ++broken;
  return broken;
}

bool DeadlineServer::process_and_close_socket(socket_t sock) {
  {
    std::lock_guard<std::mutex> lock(open_mutex_);
    open_.insert(sock);
  }
  {
    DeadlineStream stream(sock, milliseconds(read_timeout_sec_ * 1000 + read_timeout_usec_ / 1000),
                          milliseconds(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000));
    tl_served = ServedConnection{&stream, false, deadlines_.header, deadlines_.max_header_bytes,
                                 deadlines_.max_body_bytes};
    serve_connection(stream);
    tl_served = ServedConnection{};
    if (stream.stop() != DeadlineStream::Stop::kNone) linger(sock);
  }
  {
    // Forgotten before closing, so that break_connections() never touches a reused number.
    std::lock_guard<std::mutex> lock(open_mutex_);
    open_.erase(sock);
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

// HTTP keep-alive: up to keep_alive_max_count_ requests, each awaited for at
// most the keep-alive timeout and read under the deadlines.
void DeadlineServer::serve_connection(DeadlineStream& stream) {
  using Clock = DeadlineStream::Clock;
  const auto idle = std::chrono::seconds(keep_alive_timeout_sec_);
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    const auto ready = Clock::now();
    tl_served.reading_body = false;
    tl_served.allowed = deadlines_.header;
    stream.limit_reads(ready + deadlines_.header, deadlines_.max_header_bytes);
    if (!stream.wait_for_bytes(std::min(ready + idle, ready + deadlines_.header))) return;
    if (request_begin_) request_begin_();
    const size_t written = stream.bytes_written();
    bool closed = false;
    const bool ok = process_request(stream, left == 1, closed, [&](httplib::Request& req) {
      tl_served.reading_body = true;
      const BodyLimit body = body_limit(req);
      tl_served.allowed = body.time;
      stream.limit_reads(Clock::now() + body.time, body.bytes);
    });
    if (stream.stop() != DeadlineStream::Stop::kNone) {
      if (stream.bytes_written() == written) answer_stopped(stream);
      return;  // the rest of the request is unread: the connection cannot go on
    }
    if (!ok || closed) return;
  }
}

// A request whose request line did not arrive in time or in size: httplib
// gave up without an answer, so the answer is written here.
void DeadlineServer::answer_stopped(DeadlineStream& stream) {
  const auto stop = read_stop();
  if (!stop) return;
  httplib::Response res;
  res.status = stop->first;
  if (stopped_answer_) stopped_answer_(res, stop->second);
  std::string head = "HTTP/1.1 " + std::to_string(res.status) + " " +
                     (res.status == 408 ? "Request Timeout" : "Request Header Fields Too Large") +
                     "\r\nConnection: close\r\nContent-Type: " +
                     (res.has_header("Content-Type") ? res.get_header_value("Content-Type")
                                                     : std::string("text/plain")) +
                     "\r\nContent-Length: " + std::to_string(res.body.size()) + "\r\n\r\n";
  stream.write(head.data(), head.size());
  stream.write(res.body.data(), res.body.size());
}

}  // namespace kvforge::server
