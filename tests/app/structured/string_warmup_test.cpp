// The places of JSON strings precomputed per vocabulary (string_warmup.h):
// a schema's strings then find them instead of walking the vocabulary, and
// every mask stays the plain walk's.
#include "app/structured/string_warmup.h"

#include <gtest/gtest.h>

#include "app/structured/json_schema_gbnf.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace string_warmup_test {

const std::vector<std::string> kPieces = {
    "a", "b", "x", "0", "7",    "\"",  "\\",  "n",   "u",   "{",  "}",   "[",     "]",
    ":", ",", " ", "é", "\xC3", "\\n", "\":", "\",", "{\"", "ab", "\"}", "\"k\":"};

const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":20},"tag":{"type":"string","maxLength":32},
  "free":{"type":"object"}},"required":["name","tag","free"]})";

TEST(StringWarmup, MasksEqualPlainWalksWithFewerWholeWalks) {
  const std::vector<std::string> tokens = grammar_test::random_vocabulary(3, 800, kPieces, 6);
  const Grammar g = compile_gbnf(json_schema_to_gbnf(kSchema));
  auto warm_vocab = grammar_test::vocab_of(tokens);
  warm_json_strings(warm_vocab);
  EXPECT_GT(warm_vocab->prefix_masks.size(), size_t(kWarmStringChars));
  auto warm = std::make_shared<GrammarConstraint>(g, warm_vocab);
  auto cold = std::make_shared<GrammarConstraint>(g, grammar_test::vocab_of(tokens));
  auto plain = std::make_shared<GrammarConstraint>(g, grammar_test::vocab_of(tokens),
                                                   grammar_test::plain_limits());
  grammar_test::expect_same_masks(warm, plain, 5, 20, 60);
  grammar_test::expect_same_masks(cold, plain, 5, 20, 60);
  EXPECT_LT(warm->whole_walks(), cold->whole_walks());
}

// Entries added while pinning outlive the cache's capacity; others do not.
TEST(StringWarmup, PinnedEntriesAreKeptForGood) {
  StackPrefixMaskCache cache(2);
  auto mask = std::make_shared<StackPrefixMask>();
  cache.set_pinning(true);
  cache.add("pinned", mask);
  cache.set_pinning(false);
  for (int i = 0; i < 5; ++i) cache.add("k" + std::to_string(i), mask);
  EXPECT_EQ(cache.find("pinned"), mask);
  EXPECT_EQ(cache.find("k0"), nullptr);
  EXPECT_EQ(cache.find("k4"), mask);
}

// A vocabulary without the tokens the warm-up steps through is left alone.
TEST(StringWarmup, AVocabularyWithoutItsTokensIsLeftAlone) {
  auto vocab = grammar_test::vocab_of({"x", "y"});
  warm_json_strings(vocab);
  EXPECT_EQ(vocab->prefix_masks.size(), 0u);
}

}  // namespace string_warmup_test
}  // namespace kvforge
