// The channel between the engine loop and the HTTP thread serving one
// request. The loop only ever pushes (never blocks on the HTTP side); the
// HTTP thread waits for news, writes to its socket at its own pace, and
// cancels when the client goes away.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "app/text_engine.h"

namespace kvforge::server {

class RequestStream {
 public:
  explicit RequestStream(int n_branches) : n_branches_(n_branches) {}

  // ---- engine loop side ----
  void accept(RequestId id);
  void reject(int status, std::string message);
  // Returns true when this event finished the last open branch.
  bool push(TextEvent event);
  void close();  // no more events (finished, aborted, or the server is stopping)

  // ---- HTTP side ----
  struct Update {
    bool accepted = false;
    std::optional<std::pair<int, std::string>> rejected;  // status, message
    std::vector<TextEvent> events;                        // new since the previous wait()
    bool closed = false;
  };
  // Blocks until the loop accepted (nullopt) or rejected (status, message) the request.
  std::optional<std::pair<int, std::string>> wait_admission();
  // Returns as soon as there are events or the stream closed, or after `timeout`.
  Update wait(std::chrono::milliseconds timeout);
  void cancel();

  // ---- either side ----
  bool cancelled() const;
  std::optional<RequestId> id() const;
  int n_branches() const { return n_branches_; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const int n_branches_;
  int finished_branches_ = 0;
  std::optional<RequestId> id_;
  std::optional<std::pair<int, std::string>> rejected_;
  std::vector<TextEvent> events_;
  bool closed_ = false;
  bool cancelled_ = false;
};

}  // namespace kvforge::server
