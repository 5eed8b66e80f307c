// The Responses API's stored responses (store: true, OpenAI's default):
// what GET /v1/responses/{id} returns and what a follow-up turn's
// previous_response_id continues. Bounded by a count and by bytes; the least
// recently used response (stored or read) goes first when either bound would
// be passed. Thread-safe: HTTP handler threads share one store.
//
// A stored response keeps the conversation as the chat template sees it and
// as the engine computed it (prompt and generated token ids), so that the
// next turn's prompt can start with exactly those tokens and the prefix
// cache serves their K/V (responses_history.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvforge::server {

struct StoredResponse {
  nlohmann::json object;                // the response object, as GET returns it
  nlohmann::ordered_json instructions;  // the request's instructions (null when none)
  nlohmann::ordered_json messages;      // chat messages: the earlier turns, input and reply
  std::string prompt_text;              // the rendered prompt its tokens were made from
  std::vector<int32_t> prompt_ids;      // the prompt as computed
  std::vector<int32_t> output_ids;      // generated (EOS excluded)
  std::string output_text;              // the reply's text, as generated
  // Bytes this entry is counted for: its serialized JSON, texts and token ids.
  size_t bytes() const;
};

struct ResponseStoreLimits {
  size_t max_count = 1000;        // serve --responses-max
  size_t max_bytes = 256u << 20;  // serve --responses-max-bytes
};

class ResponseStore {
 public:
  using Entry = std::pair<std::string, std::shared_ptr<const StoredResponse>>;

  explicit ResponseStore(ResponseStoreLimits limits);

  // Stores (or replaces) `id` as the most recently used, evicting the least
  // recently used ones past the bounds. An entry larger than max_bytes on
  // its own is not stored: returns false.
  bool put(const std::string& id, std::shared_ptr<const StoredResponse> response);
  // The response, now the most recently used; null when unknown (or evicted).
  std::shared_ptr<const StoredResponse> get(const std::string& id);
  // False when unknown.
  bool erase(const std::string& id);

  size_t size() const;
  size_t bytes() const;
  const ResponseStoreLimits& limits() const { return limits_; }
  // Every entry, least recently used first (the order put() restores them in).
  std::vector<Entry> entries() const;

 private:
  struct Slot {
    std::shared_ptr<const StoredResponse> response;
    size_t bytes = 0;
    std::list<std::string>::iterator lru;  // into lru_
  };
  void drop(std::unordered_map<std::string, Slot>::iterator it);

  const ResponseStoreLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> by_id_;
  std::list<std::string> lru_;  // least recently used first
  size_t bytes_ = 0;
};

}  // namespace kvforge::server
