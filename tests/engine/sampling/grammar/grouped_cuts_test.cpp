// Grouped cuts (ConstraintLimits::group_cuts): the stacks of a set standing
// on the same node beneath their cuts share one prefix mask and one walk of
// its roots; light cuts (light_rule_bytes): a string's first character is
// cut above the rule holding it. Nested objects put the same places of a key
// or value on many different stacks beneath; every mask must equal the
// plain walk's.
#include <gtest/gtest.h>

#include <random>

#include "grammar_test_util.h"

namespace kvforge {
namespace grouped_cuts_test {

const std::vector<std::string> kGrammars = {
    // A free object in the style of json_primitives_gbnf.cpp: bounded keys,
    // values nested to any depth (the stack beneath a key differs with it).
    R"(root   ::= object
object ::= "{" ws (pair ("," ws pair){0,3})? "}" ws
pair   ::= key ":" ws value
key    ::= "\"" char{0,6} "\"" ws
value  ::= key | object | "[" ws (value ("," ws value){0,2})? "]" ws | [0-9]{1,3} ws
char   ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
ws     ::= | " ")",
    // Unbounded strings and an ambiguous choice between two string kinds.
    R"(root ::= "[" (item ("," item)*)? "]"
item ::= "\"" [a-z]* "\"" | "\"" [a-c0-9]{0,3} "\"" | "{" root "}")",
};

const std::vector<std::string> kPieces = {
    "a", "b", "c", "x", "0", "7", "\"",   "\\",  "n",      "u",   "[",   "]",   ",",
    " ", "{", "}", ":", "é", "€", "\xC3", "\\n", "\"k\":", "\":", "\"}", "\",", "{\""};

std::vector<std::string> random_vocabulary(unsigned seed, size_t n) {
  return grammar_test::random_vocabulary(seed, n, kPieces, 8);
}

TEST(GroupedCuts, MasksEqualPlainWalksOnRandomSteps) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const std::vector<std::string> tokens = random_vocabulary(seed, 600);
    for (size_t g = 0; g < kGrammars.size(); ++g) {
      SCOPED_TRACE("vocabulary " + std::to_string(seed) + ", grammar " + std::to_string(g));
      auto fast = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammars[g]),
                                                      grammar_test::vocab_of(tokens));
      auto plain = std::make_shared<GrammarConstraint>(
          compile_gbnf(kGrammars[g]), grammar_test::vocab_of(tokens), grammar_test::plain_limits());
      grammar_test::expect_same_masks(fast, plain, seed, 30, 40);
    }
  }
}

// Grouping alone (the other shortcuts off), so its own masks are compared.
TEST(GroupedCuts, GroupingAloneEqualsPlainWalks) {
  const std::vector<std::string> tokens = random_vocabulary(7, 600);
  ConstraintLimits grouped = grammar_test::plain_limits();
  grouped.group_cuts = true;
  grouped.max_cached_unions = 0;
  auto fast = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammars[0]),
                                                  grammar_test::vocab_of(tokens), grouped);
  auto plain = std::make_shared<GrammarConstraint>(
      compile_gbnf(kGrammars[0]), grammar_test::vocab_of(tokens), grammar_test::plain_limits());
  grammar_test::expect_same_masks(fast, plain, 7, 30, 40);
}

// Light cuts alone, with a bound that makes the object rules heavy and the
// key rules light: the same masks, and a key's first character walked once
// for every place that holds a key rather than once per place.
TEST(GroupedCuts, LightCutsEqualPlainWalks) {
  const std::vector<std::string> tokens = random_vocabulary(9, 600);
  ConstraintLimits light = grammar_test::plain_limits();
  // The least bound (in steps of 64) under which the key rule is light.
  const Grammar g = compile_gbnf(kGrammars[0]);
  auto first_of = [&](const std::string& rule) {
    for (size_t r = 0; r < g.rules(); ++r)
      if (g.rule_names[r] == rule) return g.alternatives[r][0];
    return uint32_t(g.elements.size());
  };
  for (light.light_rule_bytes = 64; !LightRules(g, light.light_rule_bytes).at(first_of("key"));)
    light.light_rule_bytes += 64;
  ASSERT_FALSE(LightRules(g, light.light_rule_bytes).at(first_of("object")));
  auto fast = std::make_shared<GrammarConstraint>(compile_gbnf(kGrammars[0]),
                                                  grammar_test::vocab_of(tokens), light);
  auto plain = std::make_shared<GrammarConstraint>(
      compile_gbnf(kGrammars[0]), grammar_test::vocab_of(tokens), grammar_test::plain_limits());
  grammar_test::expect_same_masks(fast, plain, 9, 30, 40);
  EXPECT_LT(fast->whole_walks(), plain->whole_walks());
}

TEST(LightRules, WeighsTheRulesReachable) {
  // key reaches char (3 byte sets and a few elements); obj reaches key too.
  const Grammar g = compile_gbnf(R"(root ::= obj
obj  ::= "{" key ":" key ("," key ":" key)* "}"
key  ::= "\"" char{0,2} "\""
char ::= [a-z] | "\\" [nt])");
  auto pos_of = [&](const std::string& rule) {
    for (size_t r = 0; r < g.rules(); ++r)
      if (g.rule_names[r] == rule) return g.alternatives[r][0];
    ADD_FAILURE() << "no rule " << rule;
    return uint32_t{0};
  };
  LightRules big(g, 100000), small(g, 300);
  EXPECT_TRUE(big.at(pos_of("obj")));
  EXPECT_TRUE(big.at(pos_of("key")));
  EXPECT_TRUE(small.at(pos_of("key")));
  EXPECT_FALSE(small.at(pos_of("obj")));
  EXPECT_FALSE(small.at(pos_of("root")));
  EXPECT_FALSE(small.at(uint32_t(g.elements.size())));  // past the rules: heavy
}

}  // namespace grouped_cuts_test
}  // namespace kvforge
