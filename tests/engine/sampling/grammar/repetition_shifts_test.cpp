#include "engine/sampling/grammar/repetition_shifts.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace repetition_shifts_test {

// Bounded repetitions of every kind the lowering makes: JSON string
// characters (a rule with escapes and UTF-8), a byte set, a group of
// several bytes, a lower bound, nested repetitions, two repetitions of the
// same unit in a row (ambiguous), and a unit that may be empty (no shifts).
const std::vector<std::string> kGrammars = {
    R"(root  ::= "{" ws "\"k\":" ws short "," ws "\"v\":" ws long "}"
char  ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
short ::= "\"" char{0,3} "\"" ws
long  ::= "\"" char{1,14} "\"" ws
ws    ::= | " ")",
    R"(root ::= "\"" [a-z]{0,9} "\"" ("," root)?)",
    R"(root ::= ("ab" | [x-z] | "é"){2,11} "!")",
    R"(root ::= ("[" [a-c0-9]{0,4} "]"){0,6} ".")",
    R"(root ::= [a-z]{0,5} [a-z]{0,3} [0-9]{1,7} ";")",
    R"(root ::= ("a"? "b"?){0,6} "!")",
};

const std::vector<std::string> kPieces = {
    "a", "b", "c", "x", "z", "0", "7", "\"", "\\", "n",    "u",    "!",   "[",  "]",
    ".", ";", ",", " ", "{", "}", ":", "é",  "€",  "\xC3", "\xA9", "\\n", "ab", "\"k\":"};

// Tokens of up to 16 pieces: longer than many of the repetitions' bounds.
std::vector<std::string> random_vocabulary(unsigned seed, size_t n) {
  return grammar_test::random_vocabulary(seed, n, kPieces, 16);
}

// One sequence's masks with the shortcuts (shifts, cached unions, grouped
// cuts) and without (every cut stack walked whole and alone), on separate
// vocabularies so neither reuses the other's walks.
void check_same_masks(const std::string& gbnf, const std::vector<std::string>& tokens,
                      unsigned seed) {
  auto fast =
      std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), grammar_test::vocab_of(tokens));
  auto plain = std::make_shared<GrammarConstraint>(
      compile_gbnf(gbnf), grammar_test::vocab_of(tokens), grammar_test::plain_limits());
  grammar_test::expect_same_masks(fast, plain, seed, 40, 30);
}

TEST(RepetitionShifts, MasksEqualWholeWalksOnRandomSteps) {
  for (unsigned seed = 1; seed <= 2; ++seed) {
    const std::vector<std::string> tokens = random_vocabulary(seed, 800);
    for (size_t g = 0; g < kGrammars.size(); ++g) {
      SCOPED_TRACE("vocabulary " + std::to_string(seed) + ", grammar " + std::to_string(g));
      check_same_masks(kGrammars[g], tokens, seed * 10 + unsigned(g));
    }
  }
}

// [a-z]{0,4} is r4 ::= [a-z] r3 | "", ..., r1 ::= [a-z] | "": the
// references to r1 (in r2) and r2 (in r3) have a neighbour one higher, the
// reference to r3 (in r4, the top) has none; the [a-z] of r1, r2, r3 have one.
TEST(RepetitionShifts, FindsTheChainOfABoundedRepetition) {
  const Grammar g = compile_gbnf(R"(root ::= "<" [a-z]{0,4} ">")");
  const std::vector<RepetitionShift> shifts = repetition_shifts(g);
  std::vector<uint32_t> refs, units;
  for (size_t p = 0; p < g.elements.size(); ++p) {
    const RepetitionShift s = shifts[p];
    if (s.bytes == 0) continue;
    ASSERT_EQ(g.elements[p].kind, g.elements[s.pos].kind);
    (g.elements[p].kind == ElementKind::Rule ? refs : units).push_back(s.bytes);
    if (g.elements[p].kind == ElementKind::Rule) {
      EXPECT_EQ(g.elements[s.pos + 1].kind, ElementKind::End);
    }
  }
  std::sort(refs.begin(), refs.end());
  std::sort(units.begin(), units.end());
  EXPECT_EQ(refs, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(units, (std::vector<uint32_t>{1, 2, 3}));
  // A unit that may take no byte counts no bytes: no shifts.
  const Grammar empty_unit = compile_gbnf(R"(root ::= ("a"?){0,6} "!")");
  for (const RepetitionShift& s : repetition_shifts(empty_unit)) EXPECT_EQ(s.bytes, 0u);
}

// Inside a string of at most 40 letters, one character per token: one whole
// walk at the first letter serves the later ones (without shifts, a walk per letter).
TEST(RepetitionShifts, OneWholeWalkServesABoundedString) {
  const std::string gbnf = R"(root ::= "\"" [a-z]{0,40} "\"")";
  std::vector<std::string> tokens = random_vocabulary(5, 300);
  size_t walks[2];
  for (int shifts = 0; shifts < 2; ++shifts) {
    ConstraintLimits limits;
    limits.repetition_shifts = shifts == 1;
    auto c = std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), grammar_test::vocab_of(tokens),
                                                 limits);
    GrammarMatcher m(c);
    m.accept(1 + '"');
    for (int i = 0; i < 12; ++i) {
      m.allowed();
      m.accept(1 + 'a' + i);
    }
    walks[shifts] = c->whole_walks();
  }
  EXPECT_GE(walks[0], 12u);
  EXPECT_LE(walks[1], 3u);
}

}  // namespace repetition_shifts_test
}  // namespace kvforge
