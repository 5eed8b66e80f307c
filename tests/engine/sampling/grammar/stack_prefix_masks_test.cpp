#include "engine/sampling/grammar/stack_prefix_masks.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace prefix_masks_test {

// Strings, bounded strings and nesting: stacks deeper than any cut depth.
constexpr const char* kGrammarA = R"(
root   ::= object
value  ::= object | array | string | short | number
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt] )* "\"" ws
short  ::= "\"" [^"\\\x7F\x00-\x1F]{0,3} "\"" ws
number ::= "-"? [0-9]{1,4} ws
ws ::= | " "
)";
// The same string rule under other rules: shares cut stacks with A.
constexpr const char* kGrammarB = R"(
root   ::= "[" string ("," string)* "]" | "x" string "!"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt] )* "\"" ws
ws ::= | " "
)";

std::vector<std::string> pieces() {
  return {"{",   "}",  "\"",       "\":", "\"a",  "a", "b",   "é",     "\xC3", "\xA9", "1",
          "12",  "-",  " ",        ",",   ", \"", "[", "]",   "\\",    "\\n",  "x",    "!",
          "\"}", "}}", "\"a\":1}", "x\"", "\"\"", ":", "\"]", "\",\"", "ab\"", "\" }", "\"!"};
}

// Every step's mask equals the token-by-token byte walk.
void check_walks(const std::shared_ptr<GrammarConstraint>& c, int runs, unsigned seed) {
  std::mt19937 rng(seed);
  const GrammarVocabulary& v = c->vocabulary();
  for (int run = 0; run < runs; ++run) {
    GrammarMatcher m(c);
    for (int step = 0; step < 40 && !m.is_ended(); ++step) {
      const TokenMask& mask = m.allowed();
      std::vector<int32_t> ok;
      for (size_t t = 0; t < v.n_vocab(); ++t) {
        ASSERT_EQ(mask_test(mask, int32_t(t)), m.allows(int32_t(t))) << "token " << t;
        if (mask_test(mask, int32_t(t))) ok.push_back(int32_t(t));
      }
      ASSERT_FALSE(ok.empty());
      m.accept(ok[rng() % ok.size()]);
    }
  }
}

TEST(StackPrefixMasks, MaskEqualsByteWalkAtEveryCutDepth) {
  for (size_t depth : {size_t(1), size_t(2), size_t(3), size_t(5)}) {
    SCOPED_TRACE("cut depth " + std::to_string(depth));
    auto vocab = grammar_test::vocab_of(pieces());  // a fresh shared cache per depth
    ConstraintLimits limits;
    limits.cut_depth = depth;
    auto a = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammarA), vocab, limits);
    auto b = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammarB), vocab, limits);
    check_walks(a, 25, 3);
    check_walks(b, 25, 4);  // its string stacks come from A's entries in the shared cache
  }
}

// Caches far too small for the walks: masks, prefixes and unions are dropped
// and recomputed all along, and every step still equals the byte walk.
TEST(StackPrefixMasks, MaskEqualsByteWalkWithTinyCaches) {
  auto vocab = grammar_test::vocab_of(pieces());
  ConstraintLimits limits;
  limits.max_cached_masks = 3;
  limits.max_cached_unions = 2;
  auto a = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammarA), vocab, limits);
  check_walks(a, 25, 5);
}

// Inside a string the stacks are the string's characters (the same cut
// stacks in both grammars) and its closing quote (whose cut reaches the
// rules around the string): B adds only the latter.
TEST(StackPrefixMasks, AnotherGrammarsStringReusesTheEntries) {
  auto vocab = grammar_test::vocab_of(pieces());
  auto a = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammarA), vocab);
  auto b = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammarB), vocab);
  GrammarMatcher ma(a), mb(b);
  ma.accept(1);  // {
  ma.allowed();
  size_t before = vocab->prefix_masks.size();
  ma.accept(3);  // " : inside a string of A
  ma.allowed();
  const size_t added_by_a = vocab->prefix_masks.size() - before;
  mb.accept(17);  // [
  mb.allowed();
  before = vocab->prefix_masks.size();
  mb.accept(3);  // " : inside a string of B, under other rules
  mb.allowed();
  const size_t added_by_b = vocab->prefix_masks.size() - before;
  EXPECT_GE(added_by_a, 3u);
  EXPECT_LT(added_by_b, added_by_a);
}

}  // namespace prefix_masks_test
}  // namespace kvforge
