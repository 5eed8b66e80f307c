#include "app/server/request_stream.h"

namespace kvforge::server {

void RequestStream::accept(RequestId id) {
  {
    std::lock_guard lock(mu_);
    id_ = id;
  }
  cv_.notify_all();
}

void RequestStream::reject(int status, std::string message) {
  {
    std::lock_guard lock(mu_);
    rejected_ = {status, std::move(message)};
    closed_ = true;
  }
  cv_.notify_all();
}

bool RequestStream::push(TextEvent event) {
  bool all_done;
  {
    std::lock_guard lock(mu_);
    if (event.result) ++finished_branches_;
    all_done = finished_branches_ >= n_branches_;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
  return all_done;
}

void RequestStream::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

std::optional<std::pair<int, std::string>> RequestStream::wait_admission() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return id_.has_value() || rejected_.has_value() || closed_; });
  if (rejected_) return rejected_;
  if (!id_) return std::make_pair(503, std::string("the server is shutting down"));
  return std::nullopt;
}

RequestStream::Update RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || closed_; });
  Update u;
  u.accepted = id_.has_value();
  u.rejected = rejected_;
  u.events = std::move(events_);
  events_.clear();
  u.closed = closed_;
  return u;
}

void RequestStream::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
}

bool RequestStream::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

std::optional<RequestId> RequestStream::id() const {
  std::lock_guard lock(mu_);
  return id_;
}

}  // namespace kvforge::server
