#include "engine/sampling/grammar/stack_arena.h"

#include <algorithm>
#include <string>

#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {

StackArena::StackArena(const Grammar& g, size_t max_nodes, size_t max_expansion)
    : g_(g), max_nodes_(max_nodes), max_expansion_(max_expansion) {
  nodes_.push_back({0, kEmptyStack});  // the empty stack; its fields are never read
}

uint32_t StackArena::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  const auto [it, added] = index_.emplace(key, uint32_t(nodes_.size()));
  if (added) {
    if (nodes_.size() >= max_nodes_)
      throw GrammarError("grammar: more than " + std::to_string(max_nodes_) +
                         " parse stacks; the grammar is too ambiguous or nests too deep");
    nodes_.push_back({pos, parent});
  }
  return it->second;
}

void StackArena::expand(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out) {
  work_.clear();
  work_.push_back({pos, parent});
  size_t steps = 0;
  while (!work_.empty()) {
    if (++steps > max_expansion_)
      throw GrammarError("grammar: one step expands to more than " +
                         std::to_string(max_expansion_) + " alternatives");
    const StackNode w = work_.back();
    work_.pop_back();
    const Element& e = g_.elements[w.pos];
    if (e.kind == ElementKind::Bytes || is_token_element(e.kind)) {
      out.push_back(intern(w.pos, w.parent));
    } else if (e.kind == ElementKind::End) {
      if (w.parent == kEmptyStack)
        out.push_back(kEmptyStack);
      else
        work_.push_back(nodes_[w.parent]);
    } else {
      const bool tail = g_.elements[w.pos + 1].kind == ElementKind::End;
      const uint32_t resume = tail ? w.parent : intern(w.pos + 1, w.parent);
      const auto& alts = g_.alternatives[e.value];
      for (auto it = alts.rbegin(); it != alts.rend(); ++it) work_.push_back({*it, resume});
    }
  }
}

void StackArena::advance(std::span<const uint32_t> from, uint8_t b, std::vector<uint32_t>& out) {
  out.clear();
  for (uint32_t id : from)
    if (top_accepts(id, b)) expand(nodes_[id].pos + 1, nodes_[id].parent, out);
  if (out.size() > 1) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
}

uint32_t StackArena::cut(uint32_t stack, size_t depth, uint32_t bottom, uint32_t& below) {
  below = kEmptyStack;
  uint32_t top[16];
  size_t n = 0;
  uint32_t id = stack;
  for (; id != kEmptyStack && n < depth && n < 16; id = nodes_[id].parent) top[n++] = id;
  if (id == kEmptyStack) return stack;
  below = id;
  uint32_t out = bottom;
  while (n-- > 0) out = intern(nodes_[top[n]].pos, out);
  return out;
}

uint32_t StackArena::with_pos(uint32_t stack, uint32_t node, uint32_t pos) {
  std::vector<uint32_t> above;  // top first
  for (uint32_t id = stack; id != node; id = nodes_[id].parent) above.push_back(id);
  uint32_t out = intern(pos, nodes_[node].parent);
  for (auto it = above.rbegin(); it != above.rend(); ++it) out = intern(nodes_[*it].pos, out);
  return out;
}

std::vector<uint32_t> StackArena::initial() {
  std::vector<uint32_t> out;
  for (uint32_t alt : g_.alternatives[g_.root]) expand(alt, kEmptyStack, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace kvforge
