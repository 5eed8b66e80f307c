#include "engine/sampling/grammar/class_trie.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/sampling/grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace class_trie_test {

// Pieces tokens are made of: JSON punctuation and escapes, letters that are
// and are not escape or hex letters, controls, DEL, and UTF-8 whole, cut
// anywhere (lead bytes alone, continuation bytes alone) or ill-formed.
const std::vector<std::string> kPieces = {
    "a",    "b",        "n",    "u",        "x",    "Z",    "0",        "9",       "\"",
    "\\",   " ",        "{",    "}",        ":",    ",",    "[",        "]",       "-",
    ".",    "\x1F",     "\x7F", "\n",       "é",    "\xC3", "\xA9",     "€",       "\xE2\x82",
    "\x82", "\xF0\x9F", "😀",    "\xED\x9F", "\xC0", "\xFF", "\xF4\x8F", "\xE0\xA0"};

std::vector<std::string> random_vocabulary(unsigned seed, size_t n) {
  return grammar_test::random_vocabulary(seed, n, kPieces, 5);
}

// An e-mail address (word classes); JSON strings free, bounded, with escapes and \u; a class that
// splits the plain letters; an object around them; strings that take controls.
const std::vector<std::string> kGrammars = {
    R"(root  ::= "{" ws "\"k\":" ws str "," ws "\"n\":" ws short "," ws "\"e\":" ws tight "}"
char  ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
str   ::= "\"" char* "\"" ws
short ::= "\"" char{0,5} "\"" ws
tight ::= "\"" ([a-m] | "\\n" | [é€])* "\""
ws    ::= | " ")",
    R"(root ::= ("[" (item ("," item)*)? "]") | item
item ::= "\"" char{2,7} "\"" | [0-9]+ | "\"" [^"]* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt])",
    R"(root ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["n] )* "\"" ( "," root )?)",
    R"(root ::= [a-zA-Z0-9_+-]{1,6} ("." [a-zA-Z0-9]{1,4}){0,2} "@" [a-zA-Z]{2,5} | [0-9]+ "a")",
};

// One sequence's masks under class walks and byte walks (separate
// vocabularies, so neither reuses the other's cached walks), and each token
// against its own byte walk.
void check_same_masks(const std::string& gbnf, const std::vector<std::string>& tokens,
                      unsigned seed) {
  auto vocab_classes = grammar_test::vocab_of(tokens);
  auto vocab_bytes = grammar_test::vocab_of(tokens);
  ConstraintLimits bytes_only;
  bytes_only.class_walks = false;
  auto fast = std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), vocab_classes);
  auto plain = std::make_shared<GrammarConstraint>(compile_gbnf(gbnf), vocab_bytes, bytes_only);
  std::mt19937 rng(seed);
  for (int run = 0; run < 12; ++run) {
    GrammarMatcher mf(fast), mp(plain);
    for (int step = 0; step < 30 && !mf.is_ended(); ++step) {
      const TokenMask& a = mf.allowed();
      ASSERT_EQ(a, mp.allowed()) << "run " << run << " step " << step;
      std::vector<int32_t> ok;
      for (size_t t = 0; t < vocab_classes->n_vocab(); ++t) {
        ASSERT_EQ(mask_test(a, int32_t(t)), mf.allows(int32_t(t))) << "token " << t;
        if (mask_test(a, int32_t(t))) ok.push_back(int32_t(t));
      }
      ASSERT_FALSE(ok.empty());
      const int32_t t = ok[rng() % ok.size()];
      mf.accept(t);
      mp.accept(t);
    }
  }
}

TEST(ClassTrie, MasksEqualByteWalksOnRandomVocabularies) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const std::vector<std::string> tokens = random_vocabulary(seed, 600);
    for (size_t g = 0; g < kGrammars.size(); ++g) {
      SCOPED_TRACE("vocabulary " + std::to_string(seed) + ", grammar " + std::to_string(g));
      check_same_masks(kGrammars[g], tokens, seed * 10 + unsigned(g));
    }
  }
}

// Every token sits at the class node its bytes spell class by class, and
// every byte node is listed under exactly one class node.
TEST(ClassTrie, SpellsEveryTokenByItsClasses) {
  const std::vector<std::string> tokens = random_vocabulary(7, 300);
  const TokenTrie bytes(tokens);
  const ClassTrie ct(bytes, tokens, json_text_classes());
  size_t listed = 0;
  for (uint32_t i = 0; i < ct.trie().size(); ++i) listed += ct.real_nodes(ct.trie().node(i)).size();
  EXPECT_EQ(listed, bytes.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    const TokenTrie::Node* n = &ct.trie().root();
    for (char c : tokens[t]) {
      const uint8_t cls = ct.classes().of[uint8_t(c)];
      const auto kids = ct.trie().children(*n);
      const auto it = std::find_if(kids.begin(), kids.end(),
                                   [&](const TokenTrie::Node& k) { return k.byte == cls; });
      ASSERT_NE(it, kids.end()) << "token " << t;
      n = &*it;
    }
    const auto here = ct.trie().tokens(*n);
    EXPECT_NE(std::find(here.begin(), here.end(), int32_t(t)), here.end()) << "token " << t;
  }
}

// The partition keeps apart what a JSON string tells apart.
TEST(ClassTrie, JsonTextClasses) {
  const ByteClasses c = json_text_classes();
  EXPECT_EQ(c.of['a'], c.of['n']);
  EXPECT_EQ(c.of['a'], c.of[' ']);
  EXPECT_NE(c.of['a'], c.of['"']);
  EXPECT_NE(c.of['"'], c.of['\\']);
  EXPECT_NE(c.of['\n'], c.of['\t']);
  EXPECT_NE(c.of[0xC3], c.of[0xA9]);
  EXPECT_NE(c.of[0xE0], c.of[0xE1]);
  EXPECT_EQ(c.of[0xC2], c.of[0xDF]);
  ByteSet letters;
  letters.set_range('a', 'm');
  EXPECT_FALSE(c.keeps_whole(letters));
  ByteSet quote;
  quote.set('"');
  EXPECT_TRUE(c.keeps_whole(quote));
  const ByteClasses w = word_classes();
  EXPECT_EQ(w.of['a'], w.of['Z']);
  EXPECT_EQ(w.of['0'], w.of['9']);
  EXPECT_NE(w.of['a'], w.of['0']);
  EXPECT_NE(w.of['.'], w.of['@']);
  EXPECT_EQ(w.of[0xC3], c.of[0xC3] - c.of[0x80] + w.of[0x80]);
  ByteSet alnum;
  alnum.set_range('a', 'z');
  alnum.set_range('A', 'Z');
  alnum.set_range('0', '9');
  EXPECT_TRUE(w.keeps_whole(alnum));
  EXPECT_FALSE(c.keeps_whole(alnum));
}

}  // namespace class_trie_test
}  // namespace kvforge
