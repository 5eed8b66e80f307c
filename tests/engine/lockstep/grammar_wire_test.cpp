// engine/lockstep/grammar_wire and follower_grammars: a request's grammar
// reaches the other ranks of a tensor-parallel run as its rules, decoded
// rule for rule, bound to the follower's vocabulary so that it allows the
// same tokens as rank 0's; a corrupt grammar is an error naming it.
#include "engine/lockstep/grammar_wire.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/lockstep/follower_grammars.h"
#include "engine/lockstep/step_message.h"
#include "engine/sampling/grammar/grammar_compiler.h"

namespace kvforge {
namespace {

// Rules with every kind of element: nested rules, alternatives, repetition,
// byte classes and a multi-byte character.
const char* kGbnf = R"(root ::= "{" ws pair ("," ws pair)* "}"
pair ::= key ":" ws value
key ::= "\"" [a-z]+ "\""
value ::= [0-9]+ | "true" | "\"" [^"\\é]* "\""
ws ::= [ \t]*)";

std::shared_ptr<const GrammarVocabulary> tiny_vocabulary() {
  std::vector<std::string> bytes = {"", "{", "}", "\"", "a", "ab", ":", " ", "1", "true", ",", "é"};
  return std::make_shared<GrammarVocabulary>(std::move(bytes), std::vector<int32_t>{0});
}

std::vector<uint8_t> grammar_command_bytes(std::shared_ptr<const GrammarConstraint> g) {
  StepCommand c;
  c.add.prompt = {1};
  c.add.params.grammar = std::move(g);
  return encode_commands({c});
}

TEST(GrammarWire, RulesRoundTripThroughAStepMessage) {
  auto constraint = std::make_shared<GrammarConstraint>(compile_gbnf(kGbnf), tiny_vocabulary());
  const std::vector<uint8_t> bytes = grammar_command_bytes(constraint);
  const AddCommand a = decode_commands(bytes.data(), bytes.size(), 1)[0].add;
  ASSERT_NE(a.rules, nullptr);
  EXPECT_EQ(a.params.grammar, nullptr);  // bound by the follower, not the decoder
  // The rules the constraint was compiled from, not its grammar with the sentinel it adds.
  EXPECT_TRUE(same_rules(*a.rules, compile_gbnf(kGbnf)));
  EXPECT_FALSE(same_rules(*a.rules, constraint->grammar()));
}

TEST(GrammarWire, TheFollowerAllowsWhatRankZeroAllows) {
  const auto vocab = tiny_vocabulary();
  GrammarConstraint leader(compile_gbnf(kGbnf), vocab);
  const std::vector<uint8_t> bytes =
      grammar_command_bytes(std::make_shared<GrammarConstraint>(compile_gbnf(kGbnf), vocab));
  const AddCommand a = decode_commands(bytes.data(), bytes.size(), 1)[0].add;
  FollowerGrammars grammars([&] { return tiny_vocabulary(); });
  const std::shared_ptr<const GrammarConstraint> follower = grammars.bind(*a.rules);
  EXPECT_EQ(*follower->allowed(follower->initial_stacks()),
            *leader.allowed(leader.initial_stacks()));
  // A second request with the same rules shares the bound grammar (and its caches).
  EXPECT_EQ(grammars.bind(*a.rules), follower);
  EXPECT_NE(grammars.bind(compile_gbnf(R"(root ::= "a")")), follower);
}

TEST(GrammarWire, TokenReferencesReachTheFollowerAsWritten) {
  // Token 12 is a control token (no bytes) the grammar names by its text.
  auto vocab = [] {
    std::vector<std::string> bytes = {"",  "{", "}",    "\"", "a", "ab", ":",
                                      " ", "1", "true", ",",  "é", ""};
    return std::make_shared<GrammarVocabulary>(
        std::move(bytes), std::vector<int32_t>{0},
        std::unordered_map<std::string, int32_t>{{"<|call|>", 12}});
  };
  const char* gbnf = R"(root ::= <|call|> "a" !<[5]> <[4]>)";
  const std::vector<uint8_t> bytes =
      grammar_command_bytes(std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), vocab()));
  const AddCommand a = decode_commands(bytes.data(), bytes.size(), 1)[0].add;
  EXPECT_TRUE(same_rules(*a.rules, compile_gbnf(gbnf)));
  EXPECT_FALSE(same_rules(*a.rules, compile_gbnf(R"(root ::= <|call|> "a" !<[5]> <[3]>)")));
  FollowerGrammars grammars(vocab);
  const std::shared_ptr<const GrammarConstraint> follower = grammars.bind(*a.rules);
  TokenMask only_call((13 + 63) / 64, 0);
  mask_set(only_call, 12);
  EXPECT_EQ(*follower->allowed(follower->initial_stacks()), only_call);
}

TEST(GrammarWire, AFollowerWithoutAVocabularyRefusesAGrammar) {
  FollowerGrammars grammars({});
  EXPECT_THROW(grammars.bind(compile_gbnf(kGbnf)), std::runtime_error);
}

TEST(GrammarWire, CorruptRulesAreAnErrorNamingTheGrammar) {
  const Grammar g = compile_gbnf(kGbnf);
  ByteWriter w;
  put_grammar(w, g);
  const std::vector<uint8_t> good = w.take();
  auto decode = [](std::vector<uint8_t> bytes) {
    ByteReader r(bytes, [](const ShortRead& s) {
      throw std::runtime_error("grammar " + std::string(s.what) + " cut short");
    });
    return get_grammar(r);
  };
  EXPECT_TRUE(same_rules(decode(good), g));
  for (size_t cut : {size_t(1), size_t(9), good.size() / 2, good.size() - 1})
    EXPECT_THROW(decode({good.begin(), good.begin() + std::ptrdiff_t(cut)}), std::runtime_error)
        << cut;
  std::vector<uint8_t> bad_root = good;
  bad_root[0] = 0xff;  // the root's low byte: a rule id past the rules
  try {
    decode(bad_root);
    FAIL() << "a root past the rules decoded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("grammar root"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvforge
