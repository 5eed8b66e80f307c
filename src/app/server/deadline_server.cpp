#include "app/server/deadline_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "app/server/chunked_body.h"
#include "app/server/deadline_stream.h"
#include "app/server/http_framing.h"

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
  bool close_after = false;  // close the connection after the current response
};
thread_local ServedConnection tl_served;
// The target of the request being served, once its head arrived.
thread_local std::string tl_target;

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

// The request target of a head ("POST /api/chat?x=1 HTTP/1.1..."): its
// request line's second word, or "" when it has none.
std::string request_target(const std::string& head) {
  const size_t start = head.find(' ');
  const size_t line_end = head.find_first_of("\r\n");
  if (start == std::string::npos || start >= line_end) return {};
  const size_t end = head.find(' ', start + 1);
  return head.substr(start + 1, std::min(end, line_end) - start - 1);
}

// A new request on the served connection: its head is read next.
void begin_request(milliseconds head_time) {
  tl_served.reading_body = false;
  tl_served.allowed = head_time;
  tl_served.close_after = false;
  tl_target.clear();
}

// What a request head's reading ended with.
enum class HeadRead { kComplete, kStopped, kClosed };

// Reads a request head up to and including its empty line into `head`; what
// follows stays unread. Empty lines before the request line are skipped (RFC
// 9112 §2.2). A line ended by a bare LF ends it too, for the check to refuse.
HeadRead read_head(DeadlineStream& stream, std::string& head) {
  char c;
  while (true) {
    const ssize_t n = stream.read(&c, 1);
    if (n <= 0)
      return stream.stop() != DeadlineStream::Stop::kNone ? HeadRead::kStopped : HeadRead::kClosed;
    if (head.empty() && (c == '\r' || c == '\n')) continue;
    head.push_back(c);
    if (c != '\n') continue;
    const size_t n_head = head.size();
    if ((n_head >= 2 && head[n_head - 2] == '\n') ||
        (n_head >= 3 && head[n_head - 2] == '\r' && head[n_head - 3] == '\n'))
      return HeadRead::kComplete;
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

// The headers are in: the body gets its own deadline. Every request httplib
// sees has a Content-Length (serve_connection decodes chunked bodies itself),
// which httplib checks against --max-body (413).
DeadlineServer::BodyLimit DeadlineServer::body_limit(const httplib::Request& req) const {
  const size_t declared = declared_body_bytes(req).value_or(0);
  if (declared > deadlines_.max_body_bytes)
    return {deadlines_.header, 0};  // 413 without reading what httplib would skip
  return {deadlines_.body(declared), SIZE_MAX};
}

void DeadlineServer::close_after_response() { tl_served.close_after = true; }

std::optional<std::pair<int, std::string>> DeadlineServer::read_stop() {
  const ServedConnection& c = tl_served;
  if (!c.stream || c.stream->stop() == DeadlineStream::Stop::kNone) return std::nullopt;
  const char* part = c.reading_body ? "the request body" : "the request line and headers";
  if (c.stream->stop() == DeadlineStream::Stop::kStalled)
    return std::pair{408, std::string(part) + " stalled: no byte arrived for " +
                              seconds_text(c.stream->read_timeout())};
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

std::string DeadlineServer::current_target() { return tl_target; }

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
  if (hand_over_ && hand_over_(sock)) return true;
  {
    std::lock_guard<std::mutex> lock(open_mutex_);
    open_.insert(sock);
  }
  {
    DeadlineStream stream(sock, milliseconds(read_timeout_sec_ * 1000 + read_timeout_usec_ / 1000),
                          milliseconds(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000));
    tl_served = ServedConnection{&stream, false, deadlines_.header, deadlines_.max_header_bytes,
                                 deadlines_.max_body_bytes};
    const bool unread = serve_connection(stream);
    tl_served = ServedConnection{};
    if (unread) linger(sock);
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
// most the keep-alive timeout and read under the deadlines. Each head is read
// and checked here, then replayed to httplib.
bool DeadlineServer::serve_connection(DeadlineStream& stream) {
  using Clock = DeadlineStream::Clock;
  const auto idle = std::chrono::seconds(keep_alive_timeout_sec_);
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    const auto ready = Clock::now();
    begin_request(deadlines_.header);
    stream.limit_reads(ready + deadlines_.header, deadlines_.max_header_bytes);
    // A fresh connection waits for its first request as long as a request's head may take
    // (a client that connects, then prepares a large body, is not idle); later ones wait
    // for the keep-alive time.
    const bool first = left == keep_alive_max_count_;
    if (!stream.wait_for_bytes(
            ready + (first ? deadlines_.header : std::min<milliseconds>(idle, deadlines_.header))))
      return false;
    if (request_begin_) request_begin_();
    std::string head;
    switch (read_head(stream, head)) {
      case HeadRead::kClosed:
        return false;
      case HeadRead::kStopped:
        answer_stopped(stream);
        return true;
      case HeadRead::kComplete:
        break;
    }
    tl_target = request_target(head);
    BodyFraming framing;
    if (const auto refusal = check_request_head(head, &framing)) {
      answer_and_close(stream, refusal->status, refusal->message);
      return true;
    }
    if (framing.chunked) {
      std::string body;
      if (!read_chunked(stream, body)) return true;
      stream.replay(with_content_length(head, body.size()) + body);
    } else if (!framing.content_length) {
      stream.replay(with_content_length(head, 0));
    } else {
      stream.replay(std::move(head));
    }
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
      return true;  // the rest of the request is unread: the connection cannot go on
    }
    // httplib refused the head before its end (an unknown method, say): the rest of it
    // must not be read as the next request.
    if (tl_served.close_after || stream.replay_pending()) return true;
    if (!ok || closed) return false;
  }
  return false;
}

// Decodes a chunked body under the body's deadline and byte limit; false
// when it was answered instead (408, 413, 400) or the client left.
bool DeadlineServer::read_chunked(DeadlineStream& stream, std::string& body) {
  tl_served.reading_body = true;
  tl_served.allowed = deadlines_.body(deadlines_.max_body_bytes);
  // Chunk framing may double the bytes of a body.
  stream.limit_reads(DeadlineStream::Clock::now() + tl_served.allowed,
                     2 * deadlines_.max_body_bytes + 4096);
  const ChunkedRead r = read_chunked_body(stream, deadlines_.max_body_bytes, body);
  switch (r.end) {
    case ChunkedRead::End::kComplete:
      return true;
    case ChunkedRead::End::kClosed:
      return false;
    case ChunkedRead::End::kStopped:
      answer_stopped(stream);
      return false;
    case ChunkedRead::End::kTooLarge:
      answer_and_close(
          stream, 413,
          "the request body exceeds " + std::to_string(deadlines_.max_body_bytes) + " bytes");
      return false;
    case ChunkedRead::End::kMalformed:
      answer_and_close(stream, 400, "malformed chunked body: " + r.message);
      return false;
  }
  return false;
}

// A request whose head did not arrive in time or in size: httplib never saw
// it, so the answer is written here.
void DeadlineServer::answer_stopped(DeadlineStream& stream) {
  if (const auto stop = read_stop()) answer_and_close(stream, stop->first, stop->second);
}

void DeadlineServer::answer_and_close(DeadlineStream& stream, int status,
                                      const std::string& message) {
  httplib::Response res;
  res.status = status;
  if (stopped_answer_) stopped_answer_(res, message);
  const std::string head = "HTTP/1.1 " + std::to_string(res.status) + " " +
                           reason_phrase(res.status) + "\r\nConnection: close\r\nContent-Type: " +
                           (res.has_header("Content-Type") ? res.get_header_value("Content-Type")
                                                           : std::string("text/plain")) +
                           "\r\nContent-Length: " + std::to_string(res.body.size()) + "\r\n\r\n";
  stream.write(head.data(), head.size());
  stream.write(res.body.data(), res.body.size());
}

}  // namespace kvforge::server
