// GBNF token references (llama.cpp's `<[id]>`, `<|name|>`, `!<...>`): a
// special token is allowed exactly where the grammar names it, a text token
// named by id only as that id, and a negated reference takes any one token
// but the one it names (and the end tokens).
#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace {

// 0 <|end|> (an end token), 1 <|start|>, 2 <|call|> (control: no bytes),
// then text tokens 3 "a", 4 "b", 5 "ab", 6 "<|start|>" (text spelling it), 7 "x".
std::shared_ptr<const GrammarVocabulary> special_token_vocab() {
  std::vector<std::string> bytes = {"", "", "", "a", "b", "ab", "<|start|>", "x"};
  std::unordered_map<std::string, int32_t> named = {
      {"<|end|>", 0}, {"<|start|>", 1}, {"<|call|>", 2}};
  return std::make_shared<GrammarVocabulary>(std::move(bytes), std::vector<int32_t>{0},
                                             std::move(named));
}

std::shared_ptr<const GrammarConstraint> bind_special(std::string_view gbnf) {
  return std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), special_token_vocab());
}

std::vector<int32_t> token_ids_allowed(GrammarMatcher& m) {
  std::vector<int32_t> out;
  for (int32_t t = 0; t < int32_t(m.allowed().size() * 64) && t < 8; ++t)
    if (mask_test(m.allowed(), t)) out.push_back(t);
  return out;
}

std::string bind_error_of(std::string_view gbnf) {
  try {
    bind_special(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(TokenReferences, ParseAndDescribe) {
  const Grammar g = compile_gbnf("root ::= <|start|> \"a\" !<[2]> <|start|>");
  ASSERT_EQ(g.tokens, (std::vector<std::string>{"<|start|>", "<[2]>"}));
  EXPECT_NE(g.describe().find("<|start|> [a] !<[2]> <|start|>"), std::string::npos) << g.describe();
}

TEST(TokenReferences, SpecialTokenOnlyWhereNamed) {
  GrammarMatcher m(bind_special("root ::= <|start|> (\"a\" | \"b\")+ <|call|>"));
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{1}));  // not the text token "<|start|>"
  EXPECT_FALSE(m.allows(6));
  m.accept(1);
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{3, 4, 5}));
  m.accept(5);
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_THROW(m.accept(1), GrammarError);
  m.accept(2);
  EXPECT_TRUE(m.is_complete());
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{0}));
}

TEST(TokenReferences, TextTokenByIdIsThatIdOnly) {
  // "ab" (5) by id: "a" then "b" spells the same bytes but is not token 5.
  GrammarMatcher m(bind_special("root ::= <[5]> \"x\""));
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{5}));
  EXPECT_FALSE(m.allows(3));
  m.accept(5);
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{7}));
}

TEST(TokenReferences, NegatedTakesAnyOtherWholeToken) {
  GrammarMatcher m(bind_special("root ::= (!<|call|>)* <|call|>"));
  // Every token but <|call|> and the end token, control and text alike.
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
  m.accept(6);  // taken whole, bytes never read
  m.accept(1);
  m.accept(2);
  EXPECT_TRUE(m.is_complete());
}

TEST(TokenReferences, EndTokenNamedEndsTheGrammar) {
  GrammarMatcher m(bind_special("root ::= \"a\" <|end|>"));
  EXPECT_FALSE(m.allows(0));
  m.accept(3);
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{0}));
  m.accept(0);
  EXPECT_TRUE(m.is_complete());
}

TEST(TokenReferences, TextTokenCannotRunIntoAToken) {
  // "ab" takes only the second alternative: a token element matches a whole
  // token, never the rest of one.
  GrammarMatcher m(bind_special("root ::= \"a\" <|call|> \"b\" | \"ab\" \"x\""));
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{3, 5}));
  m.accept(3);
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{2, 4}));
  m.rollback(1);
  m.accept(5);
  EXPECT_EQ(token_ids_allowed(m), (std::vector<int32_t>{7}));
}

TEST(TokenReferences, MaskEqualsPerTokenCheckAlongRandomPaths) {
  auto c = bind_special("root ::= (<|start|> [ab]* (<|call|> | !<[4]>))+ \"x\"? <|end|>");
  std::mt19937 rng(3);
  for (int run = 0; run < 40; ++run) {
    GrammarMatcher m(c);
    for (int step = 0; step < 30 && !m.is_ended() && !m.is_complete(); ++step) {
      std::vector<int32_t> ok;
      for (int32_t t = 0; t < 8; ++t) {
        ASSERT_EQ(mask_test(m.allowed(), t), m.allows(t)) << "token " << t << " step " << step;
        if (m.allows(t)) ok.push_back(t);
      }
      ASSERT_FALSE(ok.empty());
      m.accept(ok[rng() % ok.size()]);
    }
  }
}

TEST(TokenReferences, ErrorsNameTheReference) {
  EXPECT_NE(bind_error_of("root ::= <|nope|>").find("'<|nope|>' names no single token"),
            std::string::npos);
  EXPECT_NE(bind_error_of("root ::= <[8]>").find("past the vocabulary (8 tokens)"),
            std::string::npos);
  EXPECT_NE(bind_error_of("root ::= <|start|").find("end with '>'"), std::string::npos);
  EXPECT_NE(bind_error_of("root ::= <>").find("names none"), std::string::npos);
  EXPECT_NE(bind_error_of("root ::= <[]>").find("<[digits]>"), std::string::npos);
}

}  // namespace
}  // namespace kvforge
