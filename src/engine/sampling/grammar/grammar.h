// A compiled grammar: context-free rules over bytes. Every terminal is a set
// of byte values; a Unicode character class is lowered to alternatives of
// UTF-8 byte sequences (utf8_ranges.h), so tokens are matched by their bytes
// and a token may end inside a character.
//
// Layout (llama.cpp's flat form): `elements` holds every alternative of every
// rule as a run of elements closed by an End element. A position is an index
// into `elements`; a parse stack is a chain of positions (stack_arena.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kvforge {

// 256 bits: which byte values a terminal accepts.
struct ByteSet {
  std::array<uint64_t, 4> bits{};

  bool test(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) set(uint8_t(b));
  }
  bool operator==(const ByteSet&) const = default;
};

enum class ElementKind : uint8_t {
  Bytes,     // value: index into Grammar::byte_sets
  Rule,      // value: rule id
  End,       // closes an alternative
  Token,     // value: index into Grammar::tokens; that one token, whole
  NotToken,  // value: index into Grammar::tokens; any one token but it (and the end tokens)
};

// A token element tops a stack as a byte set does, but takes no byte: only
// a whole token, by id, at a token boundary (llama.cpp's `<...>` and `!<...>`).
inline bool is_token_element(ElementKind k) {
  return k == ElementKind::Token || k == ElementKind::NotToken;
}

struct Element {
  ElementKind kind;
  uint32_t value = 0;
};

struct Grammar {
  std::vector<Element> elements;
  std::vector<ByteSet> byte_sets;
  std::vector<std::vector<uint32_t>> alternatives;  // (rule) -> first positions of its alternatives
  std::vector<std::string> rule_names;              // (rule)
  // (token ref) -> as written: "<[123]>" or the token's text ("<|start|>")
  std::vector<std::string> tokens;
  // (token ref) -> token id; bound to a vocabulary by GrammarConstraint (-1 before)
  std::vector<int32_t> token_ids;
  uint32_t root = 0;

  size_t rules() const { return alternatives.size(); }
  // GBNF text of the compiled rules (terminals as byte classes), for
  // `kvforge grammar check` and error messages.
  std::string describe() const;
};

}  // namespace kvforge
