// Helpers for the grammar tests: whole-string acceptance by byte walk, and a
// byte-level vocabulary built from a list of token strings.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_constraint.h"
#include "engine/sampling/grammar/grammar_matcher.h"

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

// Every single byte (SentencePiece's byte tokens) and `n` random
// concatenations of 1 to `max_pieces` of `pieces`.
inline std::vector<std::string> random_vocabulary(unsigned seed, size_t n,
                                                  const std::vector<std::string>& pieces,
                                                  size_t max_pieces) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b) out.push_back(std::string(1, char(b)));
  for (size_t i = 0; i < n; ++i) {
    std::string t;
    for (size_t k = 0, len = 1 + rng() % max_pieces; k < len; ++k)
      t += pieces[rng() % pieces.size()];
    out.push_back(t);
  }
  return out;
}

// Every shortcut off: each cut stack (of the same depth) walked whole and
// alone, no union kept.
inline ConstraintLimits plain_limits() {
  ConstraintLimits plain;
  plain.repetition_shifts = false;
  plain.max_cached_unions = 0;
  plain.group_cuts = false;
  plain.light_rule_bytes = 0;
  return plain;
}

// `runs` sequences of up to `steps` tokens, each drawn among those `fast`
// allows: every mask must equal `plain`'s (the same grammar, another way).
inline void expect_same_masks(const std::shared_ptr<const GrammarConstraint>& fast,
                              const std::shared_ptr<const GrammarConstraint>& plain, unsigned seed,
                              int runs, int steps) {
  std::mt19937 rng(seed);
  for (int run = 0; run < runs; ++run) {
    GrammarMatcher mf(fast), mp(plain);
    for (int step = 0; step < steps && !mf.is_ended(); ++step) {
      const TokenMask& a = mf.allowed();
      ASSERT_EQ(a, mp.allowed()) << "run " << run << " step " << step;
      std::vector<int32_t> ok;
      for (size_t w = 0; w < a.size(); ++w)
        for (uint64_t bits = a[w]; bits; bits &= bits - 1)
          ok.push_back(int32_t(w * 64 + size_t(__builtin_ctzll(bits))));
      ASSERT_FALSE(ok.empty()) << "run " << run << " step " << step;
      const int32_t t = ok[rng() % ok.size()];
      mf.accept(t);
      mp.accept(t);
    }
  }
}

}  // namespace kvforge::grammar_test
