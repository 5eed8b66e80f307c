#include "engine/sampling/grammar/token_trie.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) {
  for (size_t i = 0; i < token_bytes.size(); ++i)
    if (!token_bytes[i].empty()) tokens_.push_back(int32_t(i));
  std::stable_sort(tokens_.begin(), tokens_.end(), [&](int32_t a, int32_t b) {
    return token_bytes[size_t(a)] < token_bytes[size_t(b)];
  });
  for (int32_t t : tokens_) max_depth_ = std::max(max_depth_, token_bytes[size_t(t)].size());
  if (max_depth_ > 0xFFFF)
    throw std::invalid_argument("token trie: a token of " + std::to_string(max_depth_) +
                                " bytes, at most 65,535 supported");
  nodes_.emplace_back();
  build(0, 0, uint32_t(tokens_.size()), 0, token_bytes);
}

// Tokens [lo, hi) of the sorted list share their first `depth` bytes, the
// prefix of `node`. Children get contiguous slots before any grandchild, so
// each node's children are one range.
void TokenTrie::build(uint32_t node, uint32_t lo, uint32_t hi, size_t depth,
                      const std::vector<std::string>& bytes) {
  auto byte_at = [&](uint32_t i) { return uint8_t(bytes[size_t(tokens_[i])][depth]); };
  uint32_t i = lo;
  while (i < hi && bytes[size_t(tokens_[i])].size() == depth) ++i;
  nodes_[node].token_begin = lo;
  nodes_[node].token_end = i;
  nodes_[node].depth = uint16_t(depth);
  nodes_[node].height = uint16_t(depth);
  struct Group {
    uint32_t lo, hi;
  };
  std::vector<Group> groups;
  while (i < hi) {
    uint32_t j = i + 1;
    while (j < hi && byte_at(j) == byte_at(i)) ++j;
    groups.push_back({i, j});
    i = j;
  }
  const uint32_t first = uint32_t(nodes_.size());
  nodes_[node].child_begin = first;
  nodes_[node].child_end = first + uint32_t(groups.size());
  for (const Group& g : groups) {
    Node child;
    child.byte = byte_at(g.lo);
    nodes_.push_back(child);
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    build(first + uint32_t(k), groups[k].lo, groups[k].hi, depth + 1, bytes);
    nodes_[node].height = std::max(nodes_[node].height, nodes_[first + k].height);
  }
}

}  // namespace kvforge
