// Parse stacks of a grammar, hash-consed: a stack is a node (a position in
// Grammar::elements plus the node of the stack beneath it), and equal stacks
// are one node id, so a set of stacks is a small sorted vector of ids and a
// stack can key a cache. Node 0 is the empty stack: the grammar is complete.
//
// The stacks of a matcher are always topped by a byte-set or token element
// (expand() resolves rule references and ends of alternatives first); the nodes below
// the top hold the positions to resume at when a rule ends. A rule reference
// at the end of an alternative resumes nowhere, so it pushes nothing: loops
// written as right recursion (x* -> r ::= x r | "") keep the stack flat.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/sampling/grammar/grammar.h"

namespace kvforge {

constexpr uint32_t kEmptyStack = 0;

struct StackNode {
  uint32_t pos;     // Grammar::elements index
  uint32_t parent;  // node beneath, kEmptyStack at the bottom
};

class StackArena {
 public:
  // max_nodes bounds the memory (GrammarError past it); max_expansion the
  // work of one expand() (an ambiguous grammar can multiply stacks).
  StackArena(const Grammar& g, size_t max_nodes, size_t max_expansion);

  // The stacks that `pos` on top of `parent` stands for, each topped by a
  // byte set or a token (or kEmptyStack), appended to `out` (duplicates possible).
  void expand(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out);
  // The stacks `from` become after consuming byte `b`, sorted and unique.
  void advance(std::span<const uint32_t> from, uint8_t b, std::vector<uint32_t>& out);
  // The stacks at the start of the root rule.
  std::vector<uint32_t> initial();
  // The top `depth` nodes of `stack` rebased on `bottom`, and in `below` the
  // node they stood on; `stack` itself (below = kEmptyStack) when it is no
  // deeper than `depth`.
  uint32_t cut(uint32_t stack, size_t depth, uint32_t bottom, uint32_t& below);
  // `stack` with its node `node` (one of its nodes) at position `pos` instead.
  uint32_t with_pos(uint32_t stack, uint32_t node, uint32_t pos);

  const StackNode& node(uint32_t id) const { return nodes_[id]; }
  // Whether the byte set on top of stack `id` holds `b` (false for
  // kEmptyStack and a token on top).
  bool top_accepts(uint32_t id, uint8_t b) const {
    if (id == kEmptyStack) return false;
    const Element& e = g_.elements[nodes_[id].pos];
    return e.kind == ElementKind::Bytes && g_.byte_sets[e.value].test(b);
  }
  // The element on top of stack `id` (not kEmptyStack).
  const Element& top(uint32_t id) const { return g_.elements[nodes_[id].pos]; }
  size_t size() const { return nodes_.size(); }

 private:
  uint32_t intern(uint32_t pos, uint32_t parent);

  const Grammar& g_;
  size_t max_nodes_;
  size_t max_expansion_;
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> index_;  // (pos << 32 | parent) -> node
  std::vector<StackNode> work_;                   // expand()'s scratch
};

}  // namespace kvforge
