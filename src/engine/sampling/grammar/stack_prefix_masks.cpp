#include "engine/sampling/grammar/stack_prefix_masks.h"

#include <deque>

namespace kvforge {
namespace {

// Serializes element runs, numbering rules as they are met.
class KeyWriter {
 public:
  explicit KeyWriter(const Grammar& g) : g_(g) {}

  // The elements from `pos` to the End of its alternative.
  void run(uint32_t pos) {
    for (;; ++pos) {
      const Element& e = g_.elements[pos];
      if (e.kind == ElementKind::End) break;
      if (e.kind == ElementKind::Bytes) {
        out_ += 'b';
        const ByteSet& s = g_.byte_sets[e.value];
        out_.append(reinterpret_cast<const char*>(s.bits.data()), sizeof s.bits);
      } else if (is_token_element(e.kind)) {
        // By id: the same id is the same token in every grammar of this vocabulary.
        out_ += (e.kind == ElementKind::Token ? 't' : 'n') + std::to_string(g_.token_ids[e.value]) +
                ';';
      } else {
        out_ += 'r' + std::to_string(rule(e.value)) + ';';
      }
    }
    out_ += '.';
  }

  // Every rule met, each alternative in order (rules met meanwhile too),
  // until the text is longer than `max_bytes`.
  void rules(size_t max_bytes) {
    while (!pending_.empty() && out_.size() <= max_bytes) {
      const uint32_t r = pending_.front();
      pending_.pop_front();
      out_ += 'R';
      for (uint32_t alt : g_.alternatives[r]) run(alt);
    }
  }

  std::string& text() { return out_; }

 private:
  uint32_t rule(uint32_t id) {
    const auto [it, added] = ids_.emplace(id, uint32_t(ids_.size()));
    if (added) pending_.push_back(id);
    return it->second;
  }

  const Grammar& g_;
  std::string out_;
  std::unordered_map<uint32_t, uint32_t> ids_;
  std::deque<uint32_t> pending_;
};

}  // namespace

std::string state_key(const Grammar& g, const StackArena& arena, uint32_t stack, uint32_t sentinel,
                      size_t max_bytes) {
  KeyWriter w(g);
  uint32_t id = stack;
  for (; id != kEmptyStack && id != sentinel; id = arena.node(id).parent) {
    w.text() += 'S';
    w.run(arena.node(id).pos);
  }
  w.text() += id == kEmptyStack ? 'E' : 'C';
  w.rules(max_bytes);
  if (w.text().size() > max_bytes) return {};
  return std::move(w.text());
}

std::shared_ptr<const StackPrefixMask> StackPrefixMaskCache::find(const std::string& key) const {
  std::lock_guard lock(mu_);
  if (const auto it = pinned_.find(key); it != pinned_.end()) return it->second;
  const auto* found = map_.find(key);
  return found ? *found : nullptr;
}

size_t StackPrefixMaskCache::size() const {
  std::lock_guard lock(mu_);
  return map_.size() + pinned_.size();
}

void StackPrefixMaskCache::add(const std::string& key,
                               std::shared_ptr<const StackPrefixMask> mask) const {
  std::lock_guard lock(mu_);
  if (pinning_)
    pinned_.emplace(key, std::move(mask));
  else
    map_.add(key, std::move(mask));
}

void StackPrefixMaskCache::set_pinning(bool on) const {
  std::lock_guard lock(mu_);
  pinning_ = on;
}

}  // namespace kvforge
