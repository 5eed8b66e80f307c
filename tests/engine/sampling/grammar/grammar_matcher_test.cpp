#include "engine/sampling/grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_error.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace {

using grammar_test::vocab_of;

constexpr const char* kJsonish = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]+)? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";

std::vector<std::string> test_pieces() {
  std::vector<std::string> p = {
      "{",    "}",        "\"",  "\":",  "\"a",  "a",  "b",   "é",      "\xC3", "\xA9", "\xE2\x82",
      "\xAC", "1",        "12",  "-",    ".",    "5",  " ",   "\n",     ",",    ", \"", "[",
      "]",    "true",     "tr",  "ue",   "null", "\\", "\\n", "u00",    "e9",   "{\"",  "\"}",
      "}}",   "\"a\":1}", "x\"", "\"\"", ":",    "  ", "\t",  "<|ctl|>"};
  return p;
}

// The mask must equal, token by token, a plain walk of the token's bytes.
void expect_mask_matches_walk(GrammarMatcher& m, const GrammarVocabulary& v) {
  const TokenMask& mask = m.allowed();
  for (size_t t = 0; t < v.n_vocab(); ++t)
    ASSERT_EQ(mask_test(mask, int32_t(t)), m.allows(int32_t(t))) << "token " << t;
}

TEST(GrammarMatcher, MaskEqualsByteWalkAlongRandomPaths) {
  auto vocab = vocab_of(test_pieces());
  auto c = std::make_shared<GrammarConstraint>(compile_gbnf(kJsonish), vocab);
  std::mt19937 rng(7);
  for (int run = 0; run < 30; ++run) {
    GrammarMatcher m(c);
    for (int step = 0; step < 40 && !m.is_ended(); ++step) {
      expect_mask_matches_walk(m, *vocab);
      const TokenMask& mask = m.allowed();
      std::vector<int32_t> ok;
      for (size_t t = 0; t < vocab->n_vocab(); ++t)
        if (mask_test(mask, int32_t(t))) ok.push_back(int32_t(t));
      ASSERT_FALSE(ok.empty()) << "dead end at step " << step;
      m.accept(ok[rng() % ok.size()]);
    }
  }
}

TEST(GrammarMatcher, EndOnlyWhenCompleteAndControlTokensNever) {
  auto vocab = vocab_of(test_pieces());
  auto c = std::make_shared<GrammarConstraint>(compile_gbnf(kJsonish), vocab);
  GrammarMatcher m(c);
  const int32_t open = 1, close = 2, ctl = int32_t(test_pieces().size());  // "<|ctl|>" is last
  EXPECT_FALSE(m.allows(0));
  m.accept(open);
  EXPECT_FALSE(mask_test(m.allowed(), 0));
  m.accept(close);
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(mask_test(m.allowed(), 0));
  EXPECT_FALSE(mask_test(m.allowed(), ctl));
  EXPECT_THROW(m.accept(open), GrammarError);
  m.accept(0);
  EXPECT_TRUE(m.is_ended());
}

TEST(GrammarMatcher, PartialUtf8TokensJoinIntoOneCharacter) {
  auto vocab = vocab_of(test_pieces());
  auto c =
      std::make_shared<GrammarConstraint>(compile_gbnf("root ::= \"\\\"\" [^\"]* \"\\\"\""), vocab);
  GrammarMatcher m(c);
  m.accept(3);                 // "
  m.accept(9);                 // 0xC3: half of é
  EXPECT_TRUE(m.allows(10));   // 0xA9 completes it
  EXPECT_FALSE(m.allows(3));   // a quote cannot cut the character
  EXPECT_FALSE(m.allows(11));  // nor can another lead byte
  expect_mask_matches_walk(m, *vocab);
  m.accept(10);
  EXPECT_TRUE(m.allows(3));
}

TEST(GrammarMatcher, RollbackRestoresTheMask) {
  auto vocab = vocab_of(test_pieces());
  auto c = std::make_shared<GrammarConstraint>(compile_gbnf(kJsonish), vocab);
  GrammarMatcher m(c, 4);
  const TokenMask start = m.allowed();
  m.accept(32);  // {"
  const TokenMask in_key = m.allowed();
  m.accept(6);  // a
  m.accept(4);  // ":
  m.rollback(2);
  EXPECT_EQ(m.allowed(), in_key);
  m.rollback(1);
  EXPECT_EQ(m.allowed(), start);
  EXPECT_THROW(m.rollback(1), std::out_of_range);
  EXPECT_THROW(m.accept(22), GrammarError);  // "[" is not valid at the root object
}

// Brackets nested without end: each level makes one new parse stack, within
// a budget of 64.
std::shared_ptr<const GrammarConstraint> nesting_grammar_of_64_stacks() {
  ConstraintLimits limits;
  limits.max_stacks = 64;
  return std::make_shared<GrammarConstraint>(compile_gbnf("root ::= \"[\" root? \"]\""),
                                             vocab_of({"[", "]"}), limits);
}

TEST(GrammarMatcher, StackBudgetIsACleanError) {
  auto c = nesting_grammar_of_64_stacks();
  GrammarMatcher m(c);
  EXPECT_THROW(
      {
        for (int i = 0; i < 200; ++i) m.accept(1);
      },
      GrammarError);
}

// Caches start a constraint over once it has used half its stack budget:
// each nesting level of this grammar makes one new stack.
TEST(GrammarMatcher, AConstraintIsWornPastHalfItsStackBudget) {
  auto c = nesting_grammar_of_64_stacks();
  GrammarMatcher m(c);
  EXPECT_FALSE(c->worn());
  while (c->stack_count() <= 32) {
    EXPECT_FALSE(c->worn()) << c->stack_count() << " stacks";
    m.accept(1);
  }
  EXPECT_TRUE(c->worn()) << c->stack_count() << " stacks";
}

}  // namespace
}  // namespace kvforge
