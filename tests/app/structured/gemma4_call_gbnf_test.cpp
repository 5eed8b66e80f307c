// The tool call grammar in Gemma 4's form (gemma4_call_gbnf.h): calls in its
// notation after an optional thought channel, text under "auto", and random
// walks of the grammar read back by the reader as OpenAI calls.
#include "app/structured/gemma4_call_gbnf.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "app/chat/tool_call_reader.h"
#include "app/structured/tool_call_gbnf.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_constraint.h"
#include "engine/sampling/grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace gemma4_gbnf_test {

using nlohmann::ordered_json;

// Gemma 4's grammar does not read the schemas (gemma4_call_gbnf.h).
ToolGrammarRequest two_functions(bool text_allowed, bool parallel) {
  const ordered_json object = {{"type", "object"}};
  return {{{"get_weather", object}, {"add", object}}, text_allowed, parallel};
}

std::shared_ptr<GrammarConstraint> grammar(const ToolGrammarRequest& r) {
  return std::make_shared<GrammarConstraint>(
      compile_gbnf(tool_call_gbnf(tool_call_syntax(ToolCallStyle::kGemma4), r)),
      grammar_test::byte_vocab());
}

const std::string kCall = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>";

TEST(Gemma4CallGbnf, CallsAfterAnOptionalThought) {
  const auto required = grammar(two_functions(false, true));
  EXPECT_TRUE(grammar_test::accepts(*required, kCall));
  EXPECT_TRUE(grammar_test::accepts(*required, kCall + "<|tool_call>call:add{}<tool_call|>"));
  EXPECT_TRUE(grammar_test::accepts(
      *required, "<|channel>thought\nCall it. <|channel> <channel| <<channel|>" + kCall));
  EXPECT_TRUE(grammar_test::accepts(
      *required, "<|tool_call>call:add{a:[1,-2.5e3,{b:true,c:null}],d:<|\"|>x<|\"|>}<tool_call|>"));
  EXPECT_FALSE(grammar_test::accepts(*required, "Hello"));
  EXPECT_FALSE(grammar_test::accepts(*required, "<|channel>thought\nno end" + kCall));
  EXPECT_FALSE(grammar_test::accepts(*required, "<|tool_call>call:nope{}<tool_call|>"));
  EXPECT_FALSE(grammar_test::accepts(*required, "<|tool_call>call:add{a:bare}<tool_call|>"));
  EXPECT_FALSE(grammar_test::accepts(*required, "<|tool_call>call:add{\"a\":1}<tool_call|>"));
  // A string ends at its first closing mark.
  EXPECT_FALSE(
      grammar_test::accepts(*required, "<|tool_call>call:add{a:<|\"|>x<|\"|>y<|\"|>}<tool_call|>"));
  const auto single = grammar(two_functions(false, false));
  EXPECT_FALSE(grammar_test::accepts(*single, kCall + kCall));
  const auto auto_g = grammar(two_functions(true, true));
  EXPECT_TRUE(grammar_test::accepts(*auto_g, "Plain text."));
  EXPECT_TRUE(grammar_test::accepts(*auto_g, "<|channel>thought\nhm<channel|>Plain text."));
  EXPECT_TRUE(grammar_test::accepts(*auto_g, kCall));
  EXPECT_FALSE(grammar_test::accepts(*auto_g, "<|tool_call>call:add{a:bare}<tool_call|>"));
}

// The outer object's keys are the declared properties, when the notation can hold them.
TEST(Gemma4CallGbnf, KeysAreTheDeclaredProperties) {
  ToolGrammarRequest r = two_functions(false, true);
  r.functions[0].parameters = ordered_json::parse(R"({"type": "object", "properties":
      {"city": {"type": "string"}, "days": {"type": "integer"}}})");
  r.functions[1].parameters =
      ordered_json::parse(R"({"type": "object", "properties": {"a b": {}, "c": {}}})");
  const auto g = grammar(r);
  EXPECT_TRUE(grammar_test::accepts(
      *g, "<|tool_call>call:get_weather{days:2,city:<|\"|>Rome<|\"|>}<tool_call|>"));
  EXPECT_TRUE(grammar_test::accepts(*g, "<|tool_call>call:get_weather{}<tool_call|>"));
  EXPECT_FALSE(grammar_test::accepts(*g, "<|tool_call>call:get_weather{town:1}<tool_call|>"));
  EXPECT_FALSE(grammar_test::accepts(*g, "<|tool_call>call:get_weather{cityx:1}<tool_call|>"));
  // "a b" is no bare key: any key then.
  EXPECT_TRUE(grammar_test::accepts(*g, "<|tool_call>call:add{x:1}<tool_call|>"));
}

// Text without a mark, by the rule written for it, against a direct search.
TEST(Gemma4CallGbnf, TextWithoutAMarkIsExact) {
  const std::string mark = "<ab>";
  const auto g = grammar_test::constraint_of("root ::= " + text_without_gbnf(mark));
  const std::string alphabet = "<ab>x";
  std::mt19937 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    for (size_t n = rng() % 9; n > 0; --n) s += alphabet[rng() % alphabet.size()];
    EXPECT_EQ(grammar_test::accepts(*g, s), s.find(mark) == std::string::npos) << s;
  }
  EXPECT_THROW(text_without_gbnf("<a<"), std::invalid_argument);
  EXPECT_THROW(text_without_gbnf("<"), std::invalid_argument);
}

// Random walks of the required grammar, biased to the tokens that close
// strings, thoughts, calls and brackets (Gemma 4's marks are single tokens
// of its vocabulary, as here): each ends as whole calls the reader reads
// back, with arguments that parse as JSON objects.
TEST(Gemma4CallGbnf, RandomWalksAreReadBackAsCalls) {
  const std::vector<std::string> marks = {"<|\"|>", "<channel|>", "<tool_call|>"};
  const auto c = std::make_shared<GrammarConstraint>(
      compile_gbnf(
          tool_call_gbnf(tool_call_syntax(ToolCallStyle::kGemma4), two_functions(false, true))),
      grammar_test::byte_vocab(marks));
  const int32_t n_tokens = 257 + int32_t(marks.size());
  auto piece = [&](int32_t t) {
    return t > 256 ? marks[size_t(t - 257)] : std::string(1, char(t - 1));
  };
  std::mt19937 rng(5);
  for (int walk = 0; walk < 30; ++walk) {
    GrammarMatcher m(c);
    std::string out;
    for (int step = 0; step < 3000 && !m.is_ended(); ++step) {
      std::vector<int32_t> ok;
      for (int32_t t = 0; t < n_tokens; ++t)
        if (mask_test(m.allowed(), t)) ok.push_back(t);
      ASSERT_FALSE(ok.empty()) << out;
      int32_t pick = ok[rng() % ok.size()];
      for (int32_t t : ok)
        if (rng() % 3 == 0 && (t == 0 || t > 256 || t - 1 == ']' || t - 1 == '}')) pick = t;
      m.accept(pick);
      if (pick != 0) out += piece(pick);
    }
    ASSERT_TRUE(m.is_ended()) << out;
    ToolCallReader reader(tool_call_syntax(ToolCallStyle::kGemma4));
    // The thought channel is split off before the reader sees the reply.
    const size_t thought_end = out.find("<channel|>");
    reader.feed(out.starts_with("<|channel>") ? out.substr(thought_end + 10) : out);
    reader.finish();
    ASSERT_TRUE(reader.complete()) << out;
    for (const ToolCall& call : reader.calls())
      EXPECT_TRUE(ordered_json::parse(call.arguments).is_object()) << out;
  }
}

}  // namespace gemma4_gbnf_test
}  // namespace kvforge
