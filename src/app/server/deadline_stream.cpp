#include "app/server/deadline_stream.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kvforge::server {
namespace {

// The numeric address and port of a socket's own end (getsockname) or its peer's (getpeername).
void numeric_endpoint(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  if (addr.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  else if (addr.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0) ip = host;
}

}  // namespace

std::string peer_address(int fd) {
  std::string ip;
  int port = 0;
  numeric_endpoint(fd, /*peer=*/true, ip, port);
  return ip;
}

DeadlineStream::DeadlineStream(int fd, std::chrono::milliseconds read_timeout,
                               std::chrono::milliseconds write_timeout)
    : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

void DeadlineStream::limit_reads(Clock::time_point deadline, size_t max_bytes) {
  deadline_ = deadline;
  read_budget_ = max_bytes;
  stop_ = Stop::kNone;
}

bool DeadlineStream::poll_until(short events, Clock::time_point until) const {
  while (true) {
    const auto left = until - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    // Rounded up: a wait of less than a millisecond must not become a busy loop.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    pollfd p{fd_, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 60'000)));
    if (n > 0) return true;  // ready, or closed / failed: the next call reports which
    if (n < 0 && errno != EINTR) return false;
  }
}

DeadlineStream::Clock::time_point DeadlineStream::read_until() const {
  return std::min(deadline_, Clock::now() + read_timeout_);
}

bool DeadlineStream::wait_for_bytes(Clock::time_point until) const {
  return replay_pos_ < replay_.size() || buffer_pos_ < buffer_end_ || poll_until(POLLIN, until);
}

bool DeadlineStream::is_readable() const {
  return replay_pos_ < replay_.size() || buffer_pos_ < buffer_end_ ||
         poll_until(POLLIN, read_until());
}

void DeadlineStream::replay(std::string bytes) {
  replay_ = std::move(bytes);
  replay_pos_ = 0;
}

bool DeadlineStream::is_writable() const {
  return poll_until(POLLOUT, Clock::now() + write_timeout_);
}

ssize_t DeadlineStream::read(char* ptr, size_t size) {
  if (stop_ != Stop::kNone) return -1;
  if (replay_pos_ < replay_.size()) {
    const size_t n = std::min(size, replay_.size() - replay_pos_);
    std::memcpy(ptr, replay_.data() + replay_pos_, n);
    replay_pos_ += n;
    return static_cast<ssize_t>(n);
  }
  if (read_budget_ == 0) {
    stop_ = Stop::kTooLarge;
    return -1;
  }
  while (buffer_pos_ == buffer_end_) {
    const auto until = read_until();
    if (!poll_until(POLLIN, until)) {
      const auto now = Clock::now();
      if (now >= deadline_)
        stop_ = Stop::kDeadline;
      else if (now >= until)
        stop_ = Stop::kStalled;
      return -1;
    }
    const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (n == 0) return 0;  // the peer closed its side
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return -1;
    }
    buffer_pos_ = 0;
    buffer_end_ = static_cast<size_t>(n);
  }
  const size_t n = std::min({size, buffer_end_ - buffer_pos_, read_budget_});
  std::memcpy(ptr, buffer_.data() + buffer_pos_, n);
  buffer_pos_ += n;
  if (read_budget_ != SIZE_MAX) read_budget_ -= n;
  return static_cast<ssize_t>(n);
}

ssize_t DeadlineStream::write(const char* ptr, size_t size) {
  // All or nothing, as a blocking send(): httplib does not resend the rest of a short write.
  size_t sent = 0;
  while (sent < size) {
    if (!is_writable()) return -1;
    const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    if (n > 0) sent += static_cast<size_t>(n);
  }
  written_ += sent;
  return static_cast<ssize_t>(sent);
}

void DeadlineStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  numeric_endpoint(fd_, /*peer=*/true, ip, port);
}

void DeadlineStream::get_local_ip_and_port(std::string& ip, int& port) const {
  numeric_endpoint(fd_, /*peer=*/false, ip, port);
}

}  // namespace kvforge::server
