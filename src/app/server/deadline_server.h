// cpp-httplib's Server with a whole-request read deadline, and the socket of
// each connection at hand.
//
// cpp-httplib 0.11 times out each recv() on its own: a client sending a
// header line every 2 s, or a body byte every second, held its request and
// thread for as long as it liked. DeadlineServer serves each accepted socket
// itself (Server::process_and_close_socket is a private virtual, made for
// this; process_request is protected) through a DeadlineStream:
//
// - the request line and headers must be complete within `header` of the
//   connection becoming ready for a request, in at most `max_header_bytes`;
// - the body within a time in proportion to its Content-Length:
//   `body_at_max` for a body of `max_body_bytes`, never less than `header`;
// - past either the request is answered 408 (431 for oversized headers, 413
//   for a body over max_body_bytes whatever its framing) and the connection
//   closed; a request whose bytes stop coming for the read timeout, 408 too.
//
// It reads each request head itself and checks its framing strictly
// (http_framing.h) before httplib parses it: a refused head is answered once
// (400, 414, 415, 501, 505) and the connection closed, as is any request
// httplib itself refuses, so that the rest of a bad request is never read as
// another request.
//
// It also knows every open connection, so stop() can break them all, and the
// thread serving a request can look at its own socket (current_socket()).
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace kvforge::server {

class DeadlineStream;

struct ReadDeadlines {
  std::chrono::milliseconds header{10'000};
  std::chrono::milliseconds body_at_max{60'000};
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 64u << 10;

  // The time allowed for a body of `content_length` bytes.
  std::chrono::milliseconds body(size_t content_length) const;
};

class DeadlineServer : public httplib::Server {
 public:
  explicit DeadlineServer(ReadDeadlines deadlines) : deadlines_(deadlines) {}

  // Writes the answer to a request refused before httplib saw it: its head
  // too slow (408) or too large (431), or its framing refused (400, 414, 415,
  // 501, 505). `fill` gets the status and message, sets the body and may count it.
  using StoppedAnswer = std::function<void(httplib::Response&, const std::string& message)>;
  void set_stopped_answer(StoppedAnswer fill) { stopped_answer_ = std::move(fill); }

  // Called on the serving thread when a request's first byte arrives.
  void set_request_begin(std::function<void()> begin) { request_begin_ = std::move(begin); }

  // Called first for each accepted connection, on the thread that would serve
  // it; returns true when it took the socket (and its closing) over.
  void set_hand_over(std::function<bool(socket_t)> take) { hand_over_ = std::move(take); }

  // Serves one accepted connection on the calling thread until it closes, as
  // the listener does for each (fuzz_http_request drives it directly).
  void serve_accepted(socket_t sock) { process_and_close_socket(sock); }

  // Inside a handler, logger or error handler: closes the connection after
  // the current response (a framing error: what follows cannot be trusted).
  static void close_after_response();

  // Inside a handler (or error handler): why reading the calling thread's
  // request stopped, as a status (408, 431) and a message; nullopt if it did not.
  static std::optional<std::pair<int, std::string>> read_stop();
  // The target of the request the calling thread serves, as its request line
  // gave it ("" before that line arrived): for an answer written here.
  static std::string current_target();
  // The socket of the connection the calling thread serves, or -1.
  static int current_socket();
  // Its client's address ("" when none): known even before the headers are.
  static std::string current_remote_address();

  // Shuts down every open connection (SHUT_RDWR): blocked reads, writes and
  // keep-alive waits return, and their threads end. Returns how many.
  int break_connections();

 private:
  struct BodyLimit {
    std::chrono::milliseconds time;
    size_t bytes;
  };
  BodyLimit body_limit(const httplib::Request& req) const;
  bool process_and_close_socket(socket_t sock) override;
  // Returns whether the client may still be sending (the connection then lingers).
  bool serve_connection(DeadlineStream& stream);
  bool read_chunked(DeadlineStream& stream, std::string& body);
  void answer_stopped(DeadlineStream& stream);
  void answer_and_close(DeadlineStream& stream, int status, const std::string& message);

  const ReadDeadlines deadlines_;
  StoppedAnswer stopped_answer_;
  std::function<void()> request_begin_;
  std::function<bool(socket_t)> hand_over_;
  std::mutex open_mutex_;
  std::unordered_set<int> open_;  // sockets being served
};

}  // namespace kvforge::server
