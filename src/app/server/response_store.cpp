#include "app/server/response_store.h"

namespace kvforge::server {

size_t StoredResponse::bytes() const {
  // The JSON as it would be written (response_store_file.h), the texts and
  // the ids, plus a fixed overhead for the containers and the id.
  constexpr size_t kOverhead = 256;
  return object.dump().size() + instructions.dump().size() + messages.dump().size() +
         prompt_text.size() + output_text.size() +
         (prompt_ids.size() + output_ids.size()) * sizeof(int32_t) + kOverhead;
}

ResponseStore::ResponseStore(ResponseStoreLimits limits) : limits_(limits) {}

void ResponseStore::drop(std::unordered_map<std::string, Slot>::iterator it) {
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  by_id_.erase(it);
}

bool ResponseStore::put(const std::string& id, std::shared_ptr<const StoredResponse> response) {
  const size_t size = response->bytes() + id.size();
  std::lock_guard lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) drop(it);
  if (size > limits_.max_bytes || limits_.max_count == 0) return false;
  while (!lru_.empty() &&
         (by_id_.size() + 1 > limits_.max_count || bytes_ + size > limits_.max_bytes))
    drop(by_id_.find(lru_.front()));
  lru_.push_back(id);
  by_id_.emplace(id, Slot{std::move(response), size, std::prev(lru_.end())});
  bytes_ += size;
  return true;
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return it->second.response;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  drop(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mu_);
  return by_id_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::vector<ResponseStore::Entry> ResponseStore::entries() const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  out.reserve(lru_.size());
  for (const std::string& id : lru_) out.emplace_back(id, by_id_.at(id).response);
  return out;
}

}  // namespace kvforge::server
