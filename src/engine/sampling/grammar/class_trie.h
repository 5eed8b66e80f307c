// The vocabulary trie with each byte replaced by its class under a fixed
// partition of the 256 byte values, for the walks where most of the
// vocabulary is allowed (inside a JSON string, a run of letters and digits).
//
// Where every byte set a parse state can test holds each class whole or not
// at all, the bytes of one class lead to the same next state, so the walk
// may follow classes instead of bytes: all tokens spelled alike class by
// class are decided together. Llama 3's 128,256 tokens make a trie of about
// 275,000 byte nodes, 7,000 class nodes under the JSON text partition and
// 17,000 under the word partition. Where a state splits a class (after a backslash, an escape
// letter differs from another letter), the walk goes on in the byte trie
// from every byte node spelled like the class node (real_nodes()).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/sampling/grammar/grammar.h"
#include "engine/sampling/grammar/token_trie.h"

namespace kvforge {

struct ByteClasses {
  std::array<uint8_t, 256> of{};        // byte -> class
  std::vector<ByteSet> members;         // (class) -> its bytes
  std::vector<uint8_t> representative;  // (class) -> its lowest byte

  // Whether `set` holds every class whole or not at all.
  bool keeps_whole(const ByteSet& set) const;
};

// The partition a JSON string's characters induce: every ASCII byte a string
// must escape (controls, '"', '\\', DEL) alone, the other ASCII bytes one
// class, and the bytes past ASCII split by the ranges of UTF-8's encodings
// (lead bytes by length and range, continuation bytes 80-8F, 90-9F, A0-BF).
ByteClasses json_text_classes();
// A refinement of it for identifiers, numbers and formats: letters one
// class, digits one class, every other ASCII byte alone.
ByteClasses word_classes();

class ClassTrie {
 public:
  // `trie` is the byte trie of `token_bytes`.
  ClassTrie(const TokenTrie& trie, const std::vector<std::string>& token_bytes,
            ByteClasses classes);

  const ByteClasses& classes() const { return classes_; }
  // Node::byte is a class; tokens(node) are those spelled by its classes.
  const TokenTrie& trie() const { return trie_; }
  // The byte trie's nodes spelled, class by class, as class node `n`.
  std::span<const uint32_t> real_nodes(const TokenTrie::Node& n) const {
    const uint32_t i = trie_.index(n);
    return {real_.data() + real_begin_[i], real_begin_[i + 1] - real_begin_[i]};
  }

 private:
  ByteClasses classes_;
  TokenTrie trie_;
  std::vector<uint32_t> real_begin_;  // (class nodes + 1) offsets into real_
  std::vector<uint32_t> real_;        // byte trie node indices, grouped by class node
};

}  // namespace kvforge
