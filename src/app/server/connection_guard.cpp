#include "app/server/connection_guard.h"

#include <chrono>
#include <system_error>
#include <thread>

namespace kvforge::server {
namespace {

thread_local bool tl_over_capacity = false;

}  // namespace

ConnectionThreads::ConnectionThreads(size_t max_connections) : max_connections_(max_connections) {}

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
  // On the accepting thread: the server hands the socket over without reading from it.
  tl_over_capacity = true;
  fn();
  tl_over_capacity = false;
}

void ConnectionThreads::shutdown() {
  std::unique_lock<std::mutex> lock(open_->mutex);
  open_->ended.wait_for(lock, std::chrono::seconds(3), [&] { return open_->count == 0; });
}

bool ConnectionThreads::over_capacity() { return tl_over_capacity; }

size_t ConnectionThreads::open_connections() const {
  std::lock_guard<std::mutex> lock(open_->mutex);
  return open_->count;
}

}  // namespace kvforge::server
