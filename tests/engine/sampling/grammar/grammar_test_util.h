// Helpers for the grammar tests: whole-string acceptance by byte walk, and a
// byte-level vocabulary built from a list of token strings.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge::grammar_test {

// Token 0 is the end token; the others are `pieces` in order (ids 1..).
inline std::shared_ptr<const GrammarVocabulary> vocab_of(const std::vector<std::string>& pieces) {
  std::vector<std::string> bytes{""};
  bytes.insert(bytes.end(), pieces.begin(), pieces.end());
  return std::make_shared<GrammarVocabulary>(std::move(bytes), std::vector<int32_t>{0});
}

// Every single byte as a token (ids 1..256), plus `extra`.
inline std::shared_ptr<const GrammarVocabulary> byte_vocab(std::vector<std::string> extra = {}) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
  pieces.insert(pieces.end(), extra.begin(), extra.end());
  return vocab_of(pieces);
}

inline std::shared_ptr<const GrammarConstraint> constraint_of(std::string_view gbnf) {
  return std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), byte_vocab());
}

// Whether `text` is a whole sentence of the grammar.
inline bool accepts(const GrammarConstraint& c, std::string_view text) {
  const std::vector<uint32_t> stacks = c.advance(c.initial_stacks(), text);
  return !stacks.empty() && stacks[0] == kEmptyStack;
}

// Whether `text` is a prefix of some sentence.
inline bool accepts_prefix(const GrammarConstraint& c, std::string_view text) {
  return !c.advance(c.initial_stacks(), text).empty();
}

}  // namespace kvforge::grammar_test
