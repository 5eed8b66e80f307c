#include "app/structured/tool_call_gbnf.h"

#include <gtest/gtest.h>

#include <random>

#include "app/chat/harmony_reader.h"
#include "app/chat/tool_call_reader.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_constraint.h"
#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace tool_gbnf_test {

using nlohmann::ordered_json;

ToolGrammarRequest weather_and_add(bool text_allowed, bool parallel) {
  ToolGrammarRequest r;
  r.functions.push_back({"get_weather", ordered_json::parse(R"({"type": "object",
      "properties": {"city": {"type": "string", "maxLength": 5}, "unit": {"enum": ["c", "f"]}},
      "required": ["city", "unit"], "additionalProperties": false})")});
  r.functions.push_back({"add", ordered_json::parse(R"({"type": "object",
      "properties": {"a": {"type": "integer"}}, "required": ["a"]})")});
  r.text_allowed = text_allowed;
  r.parallel = parallel;
  return r;
}

std::shared_ptr<GrammarConstraint> grammar(ToolCallStyle style, const ToolGrammarRequest& r) {
  return std::make_shared<GrammarConstraint>(
      compile_gbnf(tool_call_gbnf(tool_call_syntax(style), r)), grammar_test::byte_vocab());
}

TEST(ToolCallGbnf, HermesCallsAndTextUnderAuto) {
  const auto auto_g = grammar(ToolCallStyle::kHermes, weather_and_add(true, true));
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
      "\"c\"}}\n</tool_call>";
  EXPECT_TRUE(grammar_test::accepts(*auto_g, call));
  EXPECT_TRUE(grammar_test::accepts(
      *auto_g, call + "\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": "
                      "-3}}\n</tool_call>"));
  EXPECT_TRUE(grammar_test::accepts(*auto_g, "Plain text, <tool_call> later is text."));
  EXPECT_TRUE(grammar_test::accepts(*auto_g, ""));
  EXPECT_TRUE(grammar_test::accepts(*auto_g, "<tool"));  // a prefix of the trigger, then the end
  // Once the trigger is written, only a valid call follows.
  EXPECT_FALSE(grammar_test::accepts(*auto_g, "<tool_call>\nhello"));
  EXPECT_FALSE(grammar_test::accepts(*auto_g,
                                     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                     "{\"city\": \"Paris!\", \"unit\": \"c\"}}\n</tool_call>"));
  EXPECT_FALSE(grammar_test::accepts(
      *auto_g, "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"));
  const auto required = grammar(ToolCallStyle::kHermes, weather_and_add(false, false));
  EXPECT_TRUE(grammar_test::accepts(*required, call));
  EXPECT_FALSE(grammar_test::accepts(*required, "text"));
  EXPECT_FALSE(grammar_test::accepts(*required, ""));
  EXPECT_FALSE(
      grammar_test::accepts(*required, call + "\n<tool_call>\n{\"name\": \"add\", \"arguments\": "
                                              "{\"a\": 1}}\n</tool_call>"));
}

TEST(ToolCallGbnf, GenericAndLlama3) {
  const auto g = grammar(ToolCallStyle::kGeneric, weather_and_add(true, true));
  EXPECT_TRUE(
      grammar_test::accepts(*g,
                            "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 1}}, "
                            "{\"name\": \"add\", \"arguments\": {\"a\": 2}}]}"));
  EXPECT_TRUE(grammar_test::accepts(*g, "{not a call"));
  EXPECT_FALSE(grammar_test::accepts(*g, "{\"tool_calls\": []}"));
  const auto l = grammar(ToolCallStyle::kLlama3, weather_and_add(true, true));
  EXPECT_TRUE(grammar_test::accepts(*l, "{\"name\": \"add\", \"parameters\": {\"a\": 7}}"));
  EXPECT_TRUE(grammar_test::accepts(*l, "Hello"));
  EXPECT_FALSE(grammar_test::accepts(*l, "{\"name\": \"add\", \"arguments\": {\"a\": 7}}"));
}

TEST(ToolCallGbnf, MistralBothForms) {
  const auto json_form = grammar(ToolCallStyle::kMistral, weather_and_add(true, true));
  EXPECT_TRUE(grammar_test::accepts(*json_form,
                                    "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1}}, "
                                    "{\"name\": \"add\", \"arguments\": {\"a\": 2}}]"));
  // Under auto, text that departs from the trigger before its end is text.
  EXPECT_TRUE(grammar_test::accepts(*json_form, "[TOOL_CALL is text"));
  EXPECT_TRUE(grammar_test::accepts(*json_form, "[TOOL_CALLS]add is text"));
  const auto json_required = grammar(ToolCallStyle::kMistral, weather_and_add(false, true));
  EXPECT_FALSE(grammar_test::accepts(*json_required, "[TOOL_CALLS]add[ARGS]{\"a\": 1}"));
  const auto args_form = grammar(ToolCallStyle::kMistralArgs, weather_and_add(false, true));
  EXPECT_TRUE(grammar_test::accepts(
      *args_form,
      "[TOOL_CALLS]add[ARGS]{\"a\": 1}[TOOL_CALLS]get_weather[ARGS]{\"city\": "
      "\"Rome\", \"unit\": \"f\"}"));
  EXPECT_FALSE(grammar_test::accepts(*args_form, "[TOOL_CALLS]add[ARGS]{\"b\": 1}"));
  EXPECT_FALSE(grammar_test::accepts(*args_form, "Hello"));
}

TEST(ToolCallGbnf, AnUnsupportedSchemaNamesTheFunction) {
  ToolGrammarRequest r;
  r.functions.push_back({"f", ordered_json::parse(R"({"type": "object", "properties":
      {"x": {"type": "number", "multipleOf": 2}}})")});
  try {
    tool_call_gbnf(tool_call_syntax(ToolCallStyle::kHermes), r);
    FAIL() << "accepted";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("function 'f' parameters"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multipleOf"), std::string::npos) << e.what();
  }
}

// Random walks of the required grammar, biased to close: each ends as whole
// calls the reader reads back, arguments that parse as JSON objects.
TEST(ToolCallGbnf, RandomWalksAreReadBackAsCalls) {
  for (ToolCallStyle style :
       {ToolCallStyle::kGeneric, ToolCallStyle::kHermes, ToolCallStyle::kLlama3,
        ToolCallStyle::kMistral, ToolCallStyle::kMistralArgs}) {
    const auto c = grammar(style, weather_and_add(false, true));
    std::mt19937 rng(7);
    for (int walk = 0; walk < 30; ++walk) {
      GrammarMatcher m(c);
      std::string out;
      for (int step = 0; step < 3000 && !m.is_ended(); ++step) {
        const TokenMask& mask = m.allowed();
        std::vector<int32_t> ok;
        for (int32_t t = 0; t <= 256; ++t)
          if (mask_test(mask, t)) ok.push_back(t);
        ASSERT_FALSE(ok.empty()) << out;
        int32_t pick = ok[rng() % ok.size()];
        for (int32_t t : ok)
          if (rng() % 3 == 0 &&
              (t == 0 || std::string("\"]}").find(char(t - 1)) != std::string::npos))
            pick = t;
        m.accept(pick);
        if (pick != 0) out += char(pick - 1);
      }
      ASSERT_TRUE(m.is_ended()) << out;
      ToolCallReader reader(tool_call_syntax(style));
      reader.feed(out);
      reader.finish();
      ASSERT_TRUE(reader.complete()) << out;
      for (const ToolCall& call : reader.calls())
        EXPECT_TRUE(ordered_json::parse(call.arguments).is_object()) << out;
    }
  }
}

// gpt-oss: bytes 1..256, then its markers as control tokens (no bytes);
// <|call|> ends the generation, as o200k_harmony's EOG set has it.
const std::vector<std::string> kHarmonyMarkers = {"<|channel|>", "<|constrain|>", "<|message|>",
                                                  "<|call|>"};

std::shared_ptr<const GrammarVocabulary> harmony_vocab() {
  std::vector<std::string> bytes{""};
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  std::unordered_map<std::string, int32_t> named;
  for (const std::string& m : kHarmonyMarkers) {
    named[m] = int32_t(bytes.size());
    bytes.push_back("");
  }
  return std::make_shared<GrammarVocabulary>(std::move(bytes),
                                             std::vector<int32_t>{0, named["<|call|>"]}, named);
}

// Random walks of harmony's required (and named) call grammar until <|call|>:
// the markers come as special tokens only, and the reader finds one call of
// an allowed function with object arguments.
TEST(ToolCallGbnf, HarmonyCallsAreSpecialTokensAndOneCall) {
  const ToolCallSyntax syntax = tool_call_syntax(ToolCallStyle::kHarmony);
  EXPECT_THROW(tool_call_gbnf(syntax, weather_and_add(true, true)), GrammarError);  // auto: read
  ToolGrammarRequest named = weather_and_add(false, true);
  named.functions.erase(named.functions.begin());  // tool_choice naming "add"
  for (const ToolGrammarRequest& r : {weather_and_add(false, true), named}) {
    auto c = std::make_shared<GrammarConstraint>(compile_gbnf(tool_call_gbnf(syntax, r)),
                                                 harmony_vocab());
    std::mt19937 rng(11);
    for (int walk = 0; walk < 20; ++walk) {
      GrammarMatcher m(c);
      std::string out;
      int32_t pick = -1;
      for (int step = 0; step < 3000 && pick != 260; ++step) {
        std::vector<int32_t> ok;
        for (int32_t t = 0; t <= 260; ++t)
          if (mask_test(m.allowed(), t)) ok.push_back(t);
        ASSERT_FALSE(ok.empty()) << out;
        ASSERT_FALSE(mask_test(m.allowed(), 0)) << out;  // never plain end of text
        pick = ok[rng() % ok.size()];
        for (int32_t t : ok)
          if (rng() % 3 == 0 &&
              (t > 256 || std::string("\"]}").find(char(t - 1)) != std::string::npos))
            pick = t;
        m.accept(pick);
        if (pick != 260)
          out += pick > 256 ? kHarmonyMarkers[size_t(pick - 257)] : std::string(1, char(pick - 1));
      }
      ASSERT_EQ(pick, 260) << out;
      ASSERT_TRUE(m.is_complete()) << out;
      ASSERT_TRUE(out.starts_with("<|channel|>commentary to=functions.")) << out;
      HarmonyReader reader(true);
      reader.feed(out);
      reader.finish();
      ASSERT_EQ(reader.calls().size(), 1u) << out;
      const ToolCall& call = reader.calls()[0];
      EXPECT_TRUE(call.name == r.functions[0].name ||
                  (r.functions.size() > 1 && call.name == r.functions[1].name))
          << out;
      EXPECT_TRUE(ordered_json::parse(call.arguments).is_object()) << out;
    }
  }
}

}  // namespace tool_gbnf_test
}  // namespace kvforge
