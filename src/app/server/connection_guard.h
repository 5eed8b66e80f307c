// How `kvforge serve` holds its connections, on cpp-httplib 0.11 (Debian's
// compiled build), which hands each accepted connection to a TaskQueue:
//
// - ConnectionThreads: one thread per connection up to a cap
//   (HttpServerOptions::threads), instead of cpp-httplib's fixed pool, which
//   queues every new connection behind the busy ones: slow clients holding
//   every pool thread left /health unanswered (docs/bench/design-measurements.md).
//   An idle connection thread costs the few touched pages of its stack.
// - Beyond the cap no thread is started: the connection is handed, on the
//   accepting thread, to whatever the server does with it (over_capacity()
//   is true there); kvforge serve gives it to an OverflowResponder
//   (overflow_responder.h), which answers 503, or /health, without waiting.
//
// Each connection is then read under deadlines and can be broken at once on
// stop (deadline_server.h).
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace kvforge::server {

class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max_connections);
  ~ConnectionThreads() override;

  void enqueue(std::function<void()> fn) override;
  // Waits (up to 3 s) for the connection threads to end; those still running
  // after that keep only shared state alive.
  void shutdown() override;

  // Whether the calling thread hands over a connection beyond the cap.
  static bool over_capacity();
  size_t open_connections() const;

 private:
  struct Open {
    std::mutex mutex;
    std::condition_variable ended;
    size_t count = 0;  // connection threads alive
  };
  const size_t max_connections_;
  std::shared_ptr<Open> open_ = std::make_shared<Open>();
};

}  // namespace kvforge::server
