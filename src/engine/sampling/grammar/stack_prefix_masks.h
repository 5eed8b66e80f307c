// What the top of a parse stack allows, apart from the stack beneath it.
//
// A stack inside a JSON string is the string's few rules on top of whatever
// holds the string (a property, an array item...). Which tokens it allows
// depends on the part beneath only for tokens that run past the string's
// end (those holding its closing quote). So the top `cut_depth` nodes (fewer
// above a heavy rule: GrammarConstraint::cut_depth) are rebased on a
// sentinel node (StackArena::cut), and one trie walk of that
// cut stack gives (a) the tokens it accepts without leaving the cut part,
// (b) the trie nodes where the cut part may end ("roots"). A whole stack's
// mask is then (a) plus, under each root, the tokens the part beneath the
// cut accepts: walks of a few small subtrees instead of the whole trie.
//
// The result depends only on the grammar reachable from the cut stack, so
// it is keyed by a canonical text of that sub-grammar (state_key) and kept
// per vocabulary, shared by every grammar that holds the same rules: the
// JSON string, number and value rules of every schema grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/sampling/grammar/fifo_cache.h"
#include "engine/sampling/grammar/grammar.h"
#include "engine/sampling/grammar/stack_arena.h"

namespace kvforge {

constexpr size_t kMaxStateKeyBytes = 8192;

struct StackPrefixMask {
  std::vector<uint64_t> accepted;  // (ceil(n_vocab / 64)) tokens the cut stack accepts
  std::vector<uint32_t> roots;     // trie node indices where the cut part may end
};

// The canonical text of the grammar reachable from cut stack `stack` down to
// `sentinel` (or the empty stack): rules numbered in the order met, byte
// sets spelled out. Equal texts accept the same bytes in the same way.
// Empty past about `max_bytes`: a cut that reaches a large part of its
// grammar (a position in a long object rule) is met once per step and
// belongs to no other grammar, so it is not worth spelling out.
std::string state_key(const Grammar& g, const StackArena& arena, uint32_t stack, uint32_t sentinel,
                      size_t max_bytes = kMaxStateKeyBytes);

// Thread-safe; keeps the `capacity` most recently added, and for good those
// added while pinning (a vocabulary's precomputed entries).
class StackPrefixMaskCache {
 public:
  explicit StackPrefixMaskCache(size_t capacity = 1024) : map_(capacity) {}
  std::shared_ptr<const StackPrefixMask> find(const std::string& key) const;
  void add(const std::string& key, std::shared_ptr<const StackPrefixMask> mask) const;
  // While on, add() keeps its entries for good.
  void set_pinning(bool on) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  mutable FifoCache<std::string, std::shared_ptr<const StackPrefixMask>> map_;
  mutable std::unordered_map<std::string, std::shared_ptr<const StackPrefixMask>> pinned_;
  mutable bool pinning_ = false;
};

}  // namespace kvforge
