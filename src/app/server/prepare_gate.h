// A global limit on the request bytes being prepared at once (JSON parsed,
// chat template rendered, prompt tokenized) by the HTTP threads. Preparing
// costs a multiple of the body in memory (docs/bench/design-measurements.md), so without a limit
// many large requests at once, even ones that are all refused in the end, exhaust the machine's
// memory.
//
// A request waits until its bytes fit beside those in flight; a request
// larger than the whole capacity runs alone. Waiting gives up (503) after
// max_wait, or as soon as `cancelled` says so (client gone, shutting down).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace kvforge::server {

class PrepareGate {
 public:
  // One 7 MB prompt at a time; many small ones side by side.
  static constexpr size_t kDefaultCapacityBytes = 8u << 20;

  explicit PrepareGate(size_t capacity_bytes,
                       std::chrono::milliseconds max_wait = std::chrono::seconds(30))
      : capacity_(capacity_bytes), max_wait_(max_wait) {}

  // Holds `bytes` of the capacity while it lives.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : gate_(other.gate_), bytes_(other.bytes_) {
      other.gate_ = nullptr;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();

   private:
    friend class PrepareGate;
    Ticket(PrepareGate* gate, size_t bytes) : gate_(gate), bytes_(bytes) {}
    PrepareGate* gate_;
    size_t bytes_;
  };

  // Throws ApiError 503 (waited max_wait) or 499 (cancelled while waiting).
  Ticket enter(size_t bytes, const std::function<bool()>& cancelled = {});

  size_t in_flight() const;

 private:
  void leave(size_t bytes);

  const size_t capacity_;
  const std::chrono::milliseconds max_wait_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  size_t in_flight_ = 0;
};

}  // namespace kvforge::server
