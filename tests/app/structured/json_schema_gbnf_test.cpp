#include "app/structured/json_schema_gbnf.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_constraint.h"
#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/grammar_matcher.h"

namespace kvforge {
namespace {

// Every byte is a token (ids 1..256; 0 ends), so walks can write any text.
std::shared_ptr<const GrammarVocabulary> byte_vocab() {
  std::vector<std::string> bytes{""};
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  return std::make_shared<GrammarVocabulary>(std::move(bytes), std::vector<int32_t>{0});
}

std::shared_ptr<GrammarConstraint> schema(const std::string& text) {
  return std::make_shared<GrammarConstraint>(compile_gbnf(json_schema_to_gbnf(text)), byte_vocab());
}

bool accepts(const GrammarConstraint& c, std::string_view text) {
  const auto s = c.advance(c.initial_stacks(), text);
  return !s.empty() && s[0] == kEmptyStack;
}

std::string error_of(const std::string& text) {
  try {
    compile_gbnf(json_schema_to_gbnf(text));
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

// A random walk of the grammar, biased to end: every output must be JSON.
std::string random_walk(const std::shared_ptr<GrammarConstraint>& c, std::mt19937& rng) {
  GrammarMatcher m(c);
  std::string out;
  for (int step = 0; step < 4000; ++step) {
    const TokenMask& mask = m.allowed();
    if (mask_test(mask, 0) && rng() % 4 == 0) return out;
    std::vector<int32_t> ok;
    for (int32_t t = 0; t <= 256; ++t)
      if (mask_test(mask, t)) ok.push_back(t);
    // Prefer structural bytes so strings and lists close.
    int32_t pick = ok[rng() % ok.size()];
    for (int32_t t : ok)
      if (rng() % 3 == 0 && t > 0 && std::string("\"]},").find(char(t - 1)) != std::string::npos)
        pick = t;
    if (pick == 0) return out;
    out += char(pick - 1);
    m.accept(pick);
  }
  return out;
}

TEST(JsonSchemaGbnf, ObjectsRequiredAndOptional) {
  auto c = schema(R"({"type":"object","properties":{"a":{"type":"integer"},
      "b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"]})");
  EXPECT_TRUE(accepts(*c, R"({"b": "x"})"));
  EXPECT_TRUE(accepts(*c, R"({"a": 1, "b": "x", "c": true})"));
  EXPECT_FALSE(accepts(*c, R"({"a": 1})"));
  EXPECT_FALSE(accepts(*c, R"({"b": 1})"));
  EXPECT_FALSE(accepts(*c, R"({"b": "x", "d": 1})"));
  auto none = schema(R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"}}})");
  EXPECT_TRUE(accepts(*none, "{}"));
  EXPECT_TRUE(accepts(*none, R"({"b": null})"));
  EXPECT_TRUE(accepts(*none, R"({"a": null, "b": null})"));
  EXPECT_FALSE(accepts(*none, R"({"a": null, })"));
}

TEST(JsonSchemaGbnf, NumbersWithinBounds) {
  auto c = schema(R"({"type":"integer","minimum":-15,"maximum":120})");
  for (int v = -30; v <= 200; ++v)
    EXPECT_EQ(accepts(*c, std::to_string(v)), v >= -15 && v <= 120) << v;
  EXPECT_FALSE(accepts(*c, "007"));
  auto x = schema(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
  EXPECT_FALSE(accepts(*x, "0"));
  EXPECT_TRUE(accepts(*x, "9"));
  EXPECT_FALSE(accepts(*x, "10"));
  auto n = schema(R"({"type":"number","minimum":-2.5,"maximum":3})");
  EXPECT_TRUE(accepts(*n, "2.75"));
  EXPECT_TRUE(accepts(*n, "3"));
  EXPECT_FALSE(accepts(*n, "3.5"));
  EXPECT_TRUE(accepts(*n, "-1.5"));
  EXPECT_FALSE(accepts(*n, "-3"));
}

TEST(JsonSchemaGbnf, StringsFormatsAndPatterns) {
  auto len = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(accepts(*len, R"("ab")"));
  EXPECT_TRUE(accepts(*len, R"("a\n")"));
  EXPECT_TRUE(accepts(*len, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));
  EXPECT_FALSE(accepts(*len, R"("abcd")"));
  EXPECT_TRUE(accepts(*schema(R"({"type":"string","format":"date"})"), R"("2024-02-28")"));
  EXPECT_FALSE(accepts(*schema(R"({"type":"string","format":"date"})"), R"("2024-13-01")"));
  EXPECT_TRUE(
      accepts(*schema(R"({"format":"date-time","type":"string"})"), R"("2024-06-30T23:59:59.5Z")"));
  EXPECT_TRUE(accepts(*schema(R"({"type":"string","format":"uuid"})"),
                      R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_TRUE(accepts(*schema(R"({"type":"string","format":"email"})"), R"("a.b@ex-1.org")"));
  auto pat = schema(R"({"type":"string","pattern":"^[A-Z]{2}-\\d+(\\.\\d)?$"})");
  EXPECT_TRUE(accepts(*pat, R"("AB-12.5")"));
  EXPECT_FALSE(accepts(*pat, R"("AB-x")"));
  auto quote = schema(R"({"type":"string","pattern":"^a\"[^b]$"})");
  EXPECT_TRUE(accepts(*quote, R"("a\"c")"));
  EXPECT_TRUE(accepts(*quote, R"("a\"\\")"));
  EXPECT_FALSE(accepts(*quote, R"("a\"b")"));
}

TEST(JsonSchemaGbnf, ArraysEnumsUnionsAndRefs) {
  auto arr = schema(R"({"type":"array","items":{"enum":["x",1,null]},"minItems":1,"maxItems":2})");
  EXPECT_TRUE(accepts(*arr, R"(["x", null])"));
  EXPECT_FALSE(accepts(*arr, "[]"));
  EXPECT_FALSE(accepts(*arr, "[1,1,1]"));
  auto tuple = schema(R"({"prefixItems":[{"type":"string"},{"const":{"k":[1]}}]})");
  EXPECT_TRUE(accepts(*tuple, R"(["s", {"k":[1]}])"));
  auto tree = schema(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
      "properties":{"v":{"type":["integer","null"]},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v","kids"]}}})");
  EXPECT_TRUE(accepts(*tree, R"({"v": 1, "kids": [{"v": null, "kids": []}]})"));
  auto any = schema(R"({"anyOf":[{"type":"string"},{"type":"number"}],"description":"x"})");
  EXPECT_TRUE(accepts(*any, "1.5"));
  EXPECT_FALSE(accepts(*any, "true"));
  auto all = schema(R"({"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
      {"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]})");
  EXPECT_TRUE(accepts(*all, R"({"a": 1, "b": 2})"));
  EXPECT_FALSE(accepts(*all, R"({"a": 1})"));
}

TEST(JsonSchemaGbnf, RandomWalksAreJson) {
  std::mt19937 rng(9);
  for (const char* s :
       {R"({"type":"object"})", R"({"type":"array","items":{"type":"number"}})",
        R"({"type":"object","properties":{"s":{"type":"string","pattern":"a+b?"}}})"}) {
    auto c = schema(s);
    for (int i = 0; i < 20; ++i) {
      const std::string out = random_walk(c, rng);
      nlohmann::json parsed;
      EXPECT_NO_THROW(parsed = nlohmann::json::parse(out)) << s << " -> " << out;
    }
  }
}

TEST(JsonSchemaGbnf, UnsupportedKeywordsAndBadInputAreNamed) {
  EXPECT_NE(error_of(R"({"type":"number","multipleOf":2})").find("'multipleOf' at #"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"properties":{"x":{"uniqueItems":true}}})").find("#/properties/x"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type":"string","format":"ipv4"})").find("format 'ipv4'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"$ref":"#/$defs/missing"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"string","pattern":"(a)\\1"})").find("not supported"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"integer","minimum":1.2,"maximum":1.8})").find("no integer"),
            std::string::npos);
  std::string big = R"({"enum":[)";
  for (int i = 0; i < 10000; ++i) big += (i ? "," : "") + std::to_string(i);
  EXPECT_NE(error_of(big + "]}").find("enum of 10000"), std::string::npos);
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"items":)";
  deep += "{}";
  for (int i = 0; i < 200; ++i) deep += "}";
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
}

}  // namespace
}  // namespace kvforge
