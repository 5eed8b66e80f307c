#include "app/server/prepare_gate.h"

#include "app/server/openai_error.h"

namespace kvforge::server {

PrepareGate::Ticket::~Ticket() {
  if (gate_) gate_->leave(bytes_);
}

PrepareGate::Ticket PrepareGate::enter(size_t bytes, const std::function<bool()>& cancelled) {
  // Short waits between looks at `cancelled`: a gone client must not keep its place.
  constexpr auto kPoll = std::chrono::milliseconds(50);
  const auto deadline = std::chrono::steady_clock::now() + max_wait_;
  std::unique_lock<std::mutex> lock(mutex_);
  while (in_flight_ != 0 && in_flight_ + bytes > capacity_) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw ApiError(503, "the server is busy preparing other large requests; retry shortly",
                     "server_error");
    if (cancelled) {
      lock.unlock();
      const bool gone = cancelled();
      lock.lock();
      if (gone)
        throw ApiError(499, "the client closed the connection; the request was aborted",
                       "invalid_request_error");
    }
    freed_.wait_for(lock, kPoll);
  }
  in_flight_ += bytes;
  return Ticket(this, bytes);
}

void PrepareGate::leave(size_t bytes) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ -= bytes;
  }
  freed_.notify_all();
}

size_t PrepareGate::in_flight() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_;
}

}  // namespace kvforge::server
