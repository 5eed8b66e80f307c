// One accepted connection as cpp-httplib's Stream, with reads that stop at a
// deadline and after a byte limit, not only after a quiet interval.
//
// cpp-httplib 0.11's own socket stream times out each recv() on its own (the
// read timeout), so a client that sends one byte every few seconds keeps a
// request, and the thread serving it, forever. DeadlineStream waits for
// each read until the earlier of the per-read timeout and the deadline that
// limit_reads() set for the request's current part (headers, then body), and
// reports why reads stopped (stop()) so the server can answer 408 or 431.
#pragma once

#include <httplib.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <string>

namespace kvforge::server {

// The numeric address of a socket's peer ("" when unknown).
std::string peer_address(int fd);

class DeadlineStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  // kDeadline: the part's deadline passed; kStalled: no byte came for a whole
  // read timeout before it; kTooLarge: the byte limit was reached.
  enum class Stop { kNone, kDeadline, kStalled, kTooLarge };

  // `fd` stays owned by the caller. Each wait for bytes (read) or for room
  // (write) lasts at most its timeout.
  DeadlineStream(int fd, std::chrono::milliseconds read_timeout,
                 std::chrono::milliseconds write_timeout);

  // From now on, reads fail once `deadline` passes or `max_bytes` more bytes
  // have been read; stop() then says which. Clears an earlier stop.
  void limit_reads(Clock::time_point deadline, size_t max_bytes);
  Stop stop() const { return stop_; }
  std::chrono::milliseconds read_timeout() const { return read_timeout_; }
  // Waits until a byte can be read without blocking, up to `until`; false at
  // `until`, or when the peer closed or the socket failed.
  bool wait_for_bytes(Clock::time_point until) const;
  // Bytes written so far (to tell whether a request was answered).
  size_t bytes_written() const { return written_; }
  // Makes the next reads return `bytes` before anything else, outside the
  // read limits: a request head the server read and checked, for httplib to parse.
  void replay(std::string bytes);
  // Whether replayed bytes are left unread (httplib stopped inside a head it was given).
  bool replay_pending() const { return replay_pos_ < replay_.size(); }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  // Waits for `events` on the socket until `until`; true when ready.
  bool poll_until(short events, Clock::time_point until) const;
  Clock::time_point read_until() const;

  int fd_;
  std::chrono::milliseconds read_timeout_, write_timeout_;
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t read_budget_ = SIZE_MAX;  // bytes read() may still return
  Stop stop_ = Stop::kNone;
  size_t written_ = 0;
  std::array<char, 4096> buffer_;  // httplib reads headers a byte at a time
  size_t buffer_pos_ = 0, buffer_end_ = 0;
  std::string replay_;  // read before buffer_
  size_t replay_pos_ = 0;
};

}  // namespace kvforge::server
