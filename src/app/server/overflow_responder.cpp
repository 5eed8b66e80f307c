#include "app/server/overflow_responder.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string_view>

#include "app/server/http_framing.h"

namespace kvforge::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHeadBytes = 8192;  // enough for any request line a client sends first
constexpr auto kWriteAndDrainTime = std::chrono::seconds(1);

bool head_complete(std::string_view head) {
  return head.find("\r\n\r\n") != std::string_view::npos ||
         head.find("\n\n") != std::string_view::npos;
}

// The method and target of a request line ("GET /health HTTP/1.1"); both
// empty when the line has not arrived whole.
OverflowRequest request_line(std::string_view head, int fd) {
  OverflowRequest r;
  r.fd = fd;
  const size_t eol = head.find('\n');
  if (eol == std::string_view::npos) return r;
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return r;
  r.method = std::string(line.substr(0, sp1));
  r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  return r;
}

std::string response_bytes(const OverflowReply& reply) {
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason_phrase(reply.status) +
                    "\r\nContent-Type: " + reply.content_type +
                    "\r\nContent-Length: " + std::to_string(reply.body.size()) + "\r\n";
  if (reply.retry_after) out += "Retry-After: 1\r\n";
  out += "Connection: close\r\n\r\n";
  out += reply.body;
  return out;
}

}  // namespace

struct OverflowResponder::Connection {
  enum class Phase { kHead, kWrite, kDrain, kDone };
  int fd;
  Phase phase = Phase::kHead;
  Clock::time_point deadline;
  std::string head;  // the request as it arrives, up to kMaxHeadBytes
  std::string out;   // the answer
  size_t sent = 0;
};

OverflowResponder::OverflowResponder(Answer answer, std::chrono::milliseconds head_time,
                                     size_t max_open)
    : answer_(std::move(answer)), head_time_(head_time), max_open_(max_open) {
  if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0)
    throw std::runtime_error("overflow responder: cannot create its wake-up pipe");
  thread_ = std::thread([this] { run(); });
}

OverflowResponder::~OverflowResponder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  const char byte = 0;
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], &byte, 1);
  thread_.join();
  for (int fd : adopted_) ::close(fd);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void OverflowResponder::adopt(int fd) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_ && held_ < max_open_) {
      adopted_.push_back(fd);
      ++held_;
      const char byte = 0;
      [[maybe_unused]] const ssize_t n = ::write(wake_[1], &byte, 1);
      return;
    }
  }
  ::close(fd);  // beyond every bound: the client sees the connection closed
}

size_t OverflowResponder::held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

void OverflowResponder::take_adopted(std::vector<Connection>& open) {
  const auto deadline = Clock::now() + head_time_;
  for (int fd : adopted_) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    open.push_back(Connection{fd, Connection::Phase::kHead, deadline, {}, {}, 0});
  }
  adopted_.clear();
}

void OverflowResponder::step(Connection& c, short revents) {
  using Phase = Connection::Phase;
  const auto now = Clock::now();
  if (c.phase == Phase::kHead) {
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[kMaxHeadBytes];
      const ssize_t n = ::recv(c.fd, buf, kMaxHeadBytes - c.head.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        c.phase = Phase::kDone;  // gone before asking anything
        return;
      }
      if (n > 0) c.head.append(buf, static_cast<size_t>(n));
    }
    if (!head_complete(c.head) && c.head.size() < kMaxHeadBytes && now < c.deadline) return;
    c.out = response_bytes(answer_(request_line(c.head, c.fd)));
    c.phase = Phase::kWrite;
    c.deadline = now + kWriteAndDrainTime;
    revents = POLLOUT;  // a fresh connection has room for a short answer: try at once
  }
  if (c.phase == Phase::kWrite) {
    if (revents & POLLOUT) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        c.phase = Phase::kDone;
        return;
      }
      if (n > 0) c.sent += static_cast<size_t>(n);
    }
    if (c.sent == c.out.size()) {
      ::shutdown(c.fd, SHUT_WR);
      c.phase = Phase::kDrain;
      c.deadline = now + kWriteAndDrainTime;
    } else if (now >= c.deadline) {
      c.phase = Phase::kDone;
    }
    return;
  }
  if (c.phase == Phase::kDrain) {
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      char scratch[4096];
      const ssize_t n = ::recv(c.fd, scratch, sizeof scratch, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) c.phase = Phase::kDone;
    }
    if (now >= c.deadline) c.phase = Phase::kDone;
  }
}

void OverflowResponder::run() {
  std::vector<Connection> open;
  std::vector<pollfd> polled;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) break;
      take_adopted(open);
    }
    polled.assign(1, pollfd{wake_[0], POLLIN, 0});
    auto next = Clock::time_point::max();
    for (const Connection& c : open) {
      polled.push_back(pollfd{
          c.fd, static_cast<short>(c.phase == Connection::Phase::kWrite ? POLLOUT : POLLIN), 0});
      next = std::min(next, c.deadline);
    }
    int timeout = -1;
    if (next != Clock::time_point::max())
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count()));
    if (::poll(polled.data(), polled.size(), timeout) < 0 && errno != EINTR) break;
    if (polled[0].revents & POLLIN) {
      char drain[64];
      while (::read(wake_[0], drain, sizeof drain) > 0) {
      }
    }
    for (size_t i = 0; i < open.size(); ++i) step(open[i], polled[i + 1].revents);
    const auto done = std::partition(open.begin(), open.end(), [](const Connection& c) {
      return c.phase != Connection::Phase::kDone;
    });
    const size_t closed = static_cast<size_t>(open.end() - done);
    for (auto it = done; it != open.end(); ++it) ::close(it->fd);
    open.erase(done, open.end());
    if (closed > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ -= closed;
    }
  }
  for (const Connection& c : open) ::close(c.fd);
}

}  // namespace kvforge::server
