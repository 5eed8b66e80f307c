#include "app/server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>

namespace kvforge::server {
namespace {

// An IPv4 (4 bytes) or IPv6 (16 bytes) address in network byte order, and a port.
struct Endpoint {
  std::array<uint8_t, 16> addr{};
  size_t len = 0;
  int port = 0;
  bool operator==(const Endpoint&) const = default;
};

std::optional<Endpoint> parse_endpoint(const std::string& host, int port) {
  Endpoint e;
  e.port = port;
  if (inet_pton(AF_INET, host.c_str(), e.addr.data()) == 1)
    e.len = 4;
  else if (inet_pton(AF_INET6, host.c_str(), e.addr.data()) == 1)
    e.len = 16;
  else
    return std::nullopt;
  return e;
}

// "0100007F:1F90" as /proc/net/tcp{,6} prints it: the address as 32-bit words
// in host byte order (one word for IPv4, four for IPv6), then the port.
std::optional<Endpoint> parse_proc_endpoint(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || (colon != 8 && colon != 32)) return std::nullopt;
  Endpoint e;
  e.len = colon / 2;
  for (size_t w = 0; w < colon / 8; ++w) {
    const uint32_t word = uint32_t(std::stoul(text.substr(w * 8, 8), nullptr, 16));
    std::memcpy(e.addr.data() + w * 4, &word, 4);
  }
  e.port = int(std::stoul(text.substr(colon + 1), nullptr, 16));
  return e;
}

// The whole of a /proc table. The kernel renders it a read() at a time from a
// live hash table, so a connection can be missed when the table changes
// between two reads; large reads make that rare, and callers retry.
std::string read_proc_table(const char* path) {
  std::string text;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  std::string chunk(size_t(256) << 10, '\0');
  ssize_t n;
  while ((n = read(fd, chunk.data(), chunk.size())) > 0) text.append(chunk.data(), size_t(n));
  close(fd);
  return text;
}

// The inode of the TCP socket connecting `local` to `remote`, or 0.
unsigned long socket_inode(const Endpoint& local, const Endpoint& remote) {
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::istringstream in(read_proc_table(table));
    std::string line;
    std::getline(in, line);  // column titles
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string sl, local_text, remote_text, skip;
      unsigned long inode = 0;
      fields >> sl >> local_text >> remote_text;
      for (int i = 0; i < 6; ++i) fields >> skip;
      fields >> inode;
      if (!fields || inode == 0) continue;
      try {
        if (parse_proc_endpoint(local_text) == local && parse_proc_endpoint(remote_text) == remote)
          return inode;
      } catch (const std::exception&) {  // a malformed line: not ours
      }
    }
  }
  return 0;
}

}  // namespace

std::optional<ConnectionWatch> ConnectionWatch::find(const std::string& local_addr, int local_port,
                                                     const std::string& remote_addr,
                                                     int remote_port) {
  const auto local = parse_endpoint(local_addr, local_port);
  const auto remote = parse_endpoint(remote_addr, remote_port);
  if (!local || !remote) return std::nullopt;
  const unsigned long inode = socket_inode(*local, *remote);
  if (inode == 0) return std::nullopt;
  const std::string wanted = "socket:[" + std::to_string(inode) + "]";
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  std::optional<ConnectionWatch> found;
  char target[64];
  while (const dirent* entry = readdir(dir)) {
    const ssize_t n = readlinkat(dirfd(dir), entry->d_name, target, sizeof target - 1);
    if (n <= 0 || std::string_view(target, size_t(n)) != wanted) continue;
    found = ConnectionWatch(std::atoi(entry->d_name));
    break;
  }
  closedir(dir);
  return found;
}

bool ConnectionWatch::peer_closed() const {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace kvforge::server
