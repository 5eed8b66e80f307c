// A map that keeps its `capacity` most recently added entries, dropping the
// oldest one at a time. The grammar's mask caches hold 16 KiB masks: emptied
// whole, they would free megabytes at once (the heap trimmed, the pages
// faulted in again as the cache refills); one at a time, a freed mask's
// memory serves the next.
#pragma once

#include <deque>
#include <unordered_map>
#include <utility>

namespace kvforge {

template <typename Key, typename Value, typename Map = std::unordered_map<Key, Value>>
class FifoCache {
 public:
  explicit FifoCache(size_t capacity) : capacity_(capacity) {}

  // Null if absent; valid until the next add().
  const Value* find(const Key& key) const {
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  // Keeps the first value added for a key; nothing with capacity 0.
  void add(const Key& key, Value value) {
    if (capacity_ == 0 || !map_.emplace(key, std::move(value)).second) return;
    order_.push_back(key);
    if (order_.size() <= capacity_) return;
    map_.erase(order_.front());
    order_.pop_front();
  }
  size_t size() const { return map_.size(); }

 private:
  size_t capacity_;
  Map map_;
  std::deque<Key> order_;  // oldest first
};

}  // namespace kvforge
