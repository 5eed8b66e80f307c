// The vocabulary as a byte trie: tokens sharing a prefix share its walk, so
// computing which tokens a parse state allows visits each distinct prefix
// once and skips a whole subtree at the first byte the grammar refuses.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvforge {

class TokenTrie {
 public:
  struct Node {
    uint32_t child_begin = 0, child_end = 0;  // range in nodes()
    uint32_t token_begin = 0, token_end = 0;  // range in tokens(): those spelled by this prefix
    uint8_t byte = 0;                         // the edge from the parent
    uint16_t depth = 0;   // bytes from the root: the length of the tokens it spells
    uint16_t height = 0;  // the longest token at or below it, in bytes
  };

  // token_bytes: (n_vocab) the bytes of each token; empty ones (control
  // tokens) are left out of the trie. Tokens longer than 65,535 bytes are refused.
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  const Node& root() const { return nodes_[0]; }
  const Node& node(uint32_t index) const { return nodes_[index]; }
  uint32_t index(const Node& n) const { return uint32_t(&n - nodes_.data()); }
  std::span<const Node> children(const Node& n) const {
    return {nodes_.data() + n.child_begin, n.child_end - n.child_begin};
  }
  std::span<const int32_t> tokens(const Node& n) const {
    return {tokens_.data() + n.token_begin, n.token_end - n.token_begin};
  }
  size_t max_depth() const { return max_depth_; }
  size_t size() const { return nodes_.size(); }

 private:
  void build(uint32_t node, uint32_t lo, uint32_t hi, size_t depth,
             const std::vector<std::string>& bytes);

  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;  // ids, sorted by their bytes
  size_t max_depth_ = 0;
};

}  // namespace kvforge
