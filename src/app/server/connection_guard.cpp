#include "app/server/connection_guard.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <system_error>
#include <thread>

namespace kvforge::server {
namespace {

thread_local bool tl_over_capacity = false;

int local_port_of(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

}  // namespace

int break_connections(int port, int listen_fd) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return 0;
  int broken = 0;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == listen_fd || fd == ::dirfd(dir)) continue;
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0 || std::string(target, static_cast<size_t>(n)).rfind("socket:", 0) != 0) continue;
    if (local_port_of(static_cast<int>(fd)) != port) continue;
    if (::shutdown(static_cast<int>(fd), SHUT_RDWR) == 0) ++broken;
  }
  ::closedir(dir);
  return broken;
}

ConnectionThreads::ConnectionThreads(size_t max_connections, size_t rejecter_threads)
    : max_connections_(max_connections),
      rejecters_(std::make_unique<httplib::ThreadPool>(rejecter_threads)) {}

ConnectionThreads::~ConnectionThreads() = default;

void ConnectionThreads::enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(open_->mutex);
    if (open_->count < max_connections_) {
      try {
        std::thread([open = open_, fn] {
          fn();
          std::lock_guard<std::mutex> done(open->mutex);
          --open->count;
          open->ended.notify_all();
        }).detach();
        ++open_->count;
        return;
      } catch (const std::system_error&) {
        // No thread to be had (a thread or memory limit): answered like a connection over the cap.
      }
    }
  }
  rejecters_->enqueue([fn = std::move(fn)] {
    tl_over_capacity = true;
    fn();
    tl_over_capacity = false;
  });
}

void ConnectionThreads::shutdown() {
  rejecters_->shutdown();
  std::unique_lock<std::mutex> lock(open_->mutex);
  open_->ended.wait_for(lock, std::chrono::seconds(3), [&] { return open_->count == 0; });
}

bool ConnectionThreads::over_capacity() { return tl_over_capacity; }

size_t ConnectionThreads::open_connections() const {
  std::lock_guard<std::mutex> lock(open_->mutex);
  return open_->count;
}

}  // namespace kvforge::server
