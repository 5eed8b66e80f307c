// Whether the client of a running HTTP handler is still connected, for
// handlers that wait a long time before writing anything (a non-streaming
// completion). cpp-httplib 0.11 gives a handler neither its socket nor an
// is_connection_closed(); but the request carries the connection's local and
// remote address, and a TCP 4-tuple names exactly one open socket: the
// handler's own, which stays open while the handler runs. The kernel's
// connection table (/proc/self/net/tcp, tcp6) gives that socket's inode, and
// /proc/self/fd the descriptor linked to it; no other thread's descriptor is
// touched on the way (ThreadSanitizer would rightly call that a race). The
// socket is then peeked at without consuming anything.
#pragma once

#include <optional>
#include <string>

namespace kvforge::server {

class ConnectionWatch {
 public:
  // nullopt when no socket matches (e.g. /proc is not mounted, or not TCP),
  // and rarely for a connection that exists (the kernel's table changed while
  // it was read): try again later.
  static std::optional<ConnectionWatch> find(const std::string& local_addr, int local_port,
                                             const std::string& remote_addr, int remote_port);

  // True once the peer closed or reset its side: end of stream or an error
  // on a non-blocking peek. Bytes waiting (a pipelined next request) mean
  // "still there".
  bool peer_closed() const;
  int fd() const { return fd_; }

 private:
  explicit ConnectionWatch(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace kvforge::server
