// The connections beyond `kvforge serve`'s cap, answered without a thread
// each: one thread polls them all.
//
// A thread per connection (connection_guard.h) is what lets a slow client
// hold only its own request; past the cap no more threads are started, and a
// small pool answering the rest one by one would wait out each slow client's
// header deadline, so that a few more slow connections than the pool has
// threads left every new one, /health included, queued. Here each connection
// beyond the cap gets a short time (`head_time`) for its request line and
// headers, read as they come, all at once in one poll loop; then it is
// answered by `answer` (/health with its status, anything else 503), its
// write side shut, what the client still sends read and dropped for up to a
// second (closing with unread bytes would reset the connection before the
// client read the answer), and closed. At most `max_open` are held; more are
// closed at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kvforge::server {

struct OverflowRequest {
  std::string method;  // empty when no request line arrived in time
  std::string target;
  int fd = -1;  // the connection, for its address; owned by the responder
};

struct OverflowReply {
  int status = 503;
  std::string content_type = "application/json";
  std::string body;
  bool retry_after = false;  // adds "Retry-After: 1"
};

class OverflowResponder {
 public:
  // Called on the responder's thread for each connection, once.
  using Answer = std::function<OverflowReply(const OverflowRequest&)>;

  OverflowResponder(Answer answer, std::chrono::milliseconds head_time, size_t max_open);
  // Closes every connection still held.
  ~OverflowResponder();
  OverflowResponder(const OverflowResponder&) = delete;
  OverflowResponder& operator=(const OverflowResponder&) = delete;

  // Takes ownership of an accepted socket. Thread-safe.
  void adopt(int fd);
  // Connections held now (for tests and metrics).
  size_t held() const;

 private:
  struct Connection;
  void run();
  void take_adopted(std::vector<Connection>& open);
  void step(Connection& c, short revents);

  const Answer answer_;
  const std::chrono::milliseconds head_time_;
  const size_t max_open_;
  int wake_[2] = {-1, -1};  // a pipe: adopt() and the destructor wake the poll
  mutable std::mutex mutex_;
  std::vector<int> adopted_;  // handed over, not yet polled
  size_t held_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kvforge::server
