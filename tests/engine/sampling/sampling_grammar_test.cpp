// The sampler under a grammar: every token it draws is one the grammar
// allows, greedy picks the best allowed token whether or not the plain
// argmax is allowed, and the end token comes only where the output is whole.
#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/sampler.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace {

// Token 0 ends; 1..: pieces. The model has two padding rows past the tokenizer's vocabulary.
const std::vector<std::string> kPieces = {"a", "b", "ab", "ba", "c", ";"};
constexpr int kModelVocab = 9;

SamplingParams with_grammar(float temperature, std::string_view gbnf) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = 11;
  p.grammar =
      std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), grammar_test::vocab_of(kPieces));
  return p;
}

TEST(SamplingGrammar, GreedyTakesTheBestAllowedToken) {
  Sampler s(with_grammar(0.0f, "root ::= (\"a\" | \"b\")+ \";\""), kModelVocab);
  // "c" (5) and a padding row (8) are best but refused; "ba" (4) is next and allowed.
  std::vector<float> logits = {0, 1, 1, 2, 3, 9, 0, 0, 10};
  EXPECT_EQ(s.sample(logits), 4);
  s.accept(4);
  logits = {5, 1, 1, 2, 3, 9, 0, 0, 10};  // the end token is refused until ";"
  EXPECT_EQ(s.sample(logits), 4);
  s.accept(4);
  logits[6] = 4;
  EXPECT_EQ(s.sample(logits), 6);
  s.accept(6);
  EXPECT_EQ(s.sample(logits), 0);  // only the end token is left
}

// A tensor-parallel step may send rank 0 only each rank's argmax when every sampler reads
// nothing else (model/vocab_argmax.h); greedy under a grammar reads every allowed logit.
TEST(SamplingGrammar, GreedyUnderAGrammarReadsMoreThanTheArgmax) {
  EXPECT_FALSE(Sampler(with_grammar(0.0f, "root ::= \"a\""), kModelVocab).reads_only_argmax());
  SamplingParams plain;
  plain.temperature = 0;
  EXPECT_TRUE(Sampler(plain, kModelVocab).reads_only_argmax());
}

TEST(SamplingGrammar, SampledTokensAlwaysKeepTheOutputInTheGrammar) {
  const std::string gbnf = "root ::= \"a\" \"b\"{1,3} \"c\"? \";\"";
  std::mt19937 rng(5);
  for (int run = 0; run < 50; ++run) {
    SamplingParams p = with_grammar(1.5f, gbnf);
    p.seed = uint64_t(run);
    p.top_k = run % 3;
    Sampler s(p, kModelVocab);
    std::string out;
    for (int step = 0; step < 10; ++step) {
      std::vector<float> logits(kModelVocab);
      for (float& l : logits) l = float(rng() % 100) / 10.0f;
      const int t = s.sample(logits);
      if (t == 0) break;
      out += kPieces[size_t(t - 1)];
      s.accept(t);
    }
    EXPECT_TRUE(grammar_test::accepts(*p.grammar, out)) << out;
  }
}

TEST(SamplingGrammar, GrammarLargerThanTheModelIsRefused) {
  EXPECT_THROW(Sampler(with_grammar(0.0f, "root ::= \"a\""), 3), std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
