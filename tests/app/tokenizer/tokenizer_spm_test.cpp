// SentencePiece BPE on hand-built vocabularies: merge order, byte fallback,
// which pieces may be merge results, the space prefix, special tokens.
#include <gtest/gtest.h>

#include "app/tokenizer/tokenizer.h"
#include "tokenizer_tiny_vocab.h"

namespace kvforge {
namespace {

using kvforge::testing::ids_of;
using kvforge::testing::PieceSpec;
using kvforge::testing::tiny_spm_vocab;

const std::string kU = "\xE2\x96\x81";  // "▁"

Vocabulary no_prefix(Vocabulary v) {
  v.add_space_prefix = false;
  return v;
}

TEST(TokenizerSpm, HigherScoreMergesFirst) {
  // "abc": both "ab" and "bc" are pieces; the better-scored one wins, and
  // "abc" is not a piece, so the loser is left as a single character.
  Vocabulary ab_wins =
      no_prefix(tiny_spm_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"bc", -2}}, false));
  EXPECT_EQ(Tokenizer::from_vocabulary(ab_wins).encode("abc", false, false),
            ids_of(ab_wins, {"ab", "c"}));
  Vocabulary bc_wins =
      no_prefix(tiny_spm_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -2}, {"bc", -1}}, false));
  EXPECT_EQ(Tokenizer::from_vocabulary(bc_wins).encode("abc", false, false),
            ids_of(bc_wins, {"a", "bc"}));
}

TEST(TokenizerSpm, EqualScoresMergeLeftmostFirst) {
  Vocabulary v = no_prefix(tiny_spm_vocab({{"a", -5}, {"aa", -1}}, false));
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("aaa", false, false), ids_of(v, {"aa", "a"}));
  EXPECT_EQ(t.encode("aaaaa", false, false), ids_of(v, {"aa", "aa", "a"}));
}

TEST(TokenizerSpm, MergesChainIntoLongerPieces) {
  Vocabulary v = tiny_spm_vocab({{"h", -9},
                                 {"e", -9},
                                 {"l", -9},
                                 {"o", -9},
                                 {kU, -9},
                                 {"ll", -1},
                                 {"he", -2},
                                 {"hell", -3},
                                 {"hello", -4},
                                 {kU + "hello", -5}},
                                false);
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("hello", false, false), ids_of(v, {kU + "hello"}));
  EXPECT_EQ(t.encode("hello hello", true, false), ids_of(v, {"<s>", kU + "hello", kU + "hello"}));
  EXPECT_EQ(t.encode("hell", false, false), ids_of(v, {kU, "hell"}));
}

TEST(TokenizerSpm, UnknownCharactersFallBackToBytes) {
  Vocabulary v = no_prefix(tiny_spm_vocab({{"a", -1}}, true));
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  // "€" is E2 82 AC.
  EXPECT_EQ(t.encode("a\xE2\x82\xAC", false, false),
            ids_of(v, {"a", "<0xE2>", "<0x82>", "<0xAC>"}));
  EXPECT_EQ(t.decode(t.encode("a\xE2\x82\xAC", false, false)), "a\xE2\x82\xAC");
}

TEST(TokenizerSpm, UnknownCharactersWithoutBytePiecesBecomeUnk) {
  Vocabulary v = no_prefix(tiny_spm_vocab({{"a", -1}}, false));
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("a\xE2\x82\xAC"
                     "a",
                     false, false),
            ids_of(v, {"a", "<unk>", "a"}));
}

TEST(TokenizerSpm, ControlAndBytePiecesAreNeverMergeResults) {
  // Text spelling "<s>" or "<0x41>" must not turn into those tokens by merging.
  Vocabulary v = no_prefix(tiny_spm_vocab(
      {{"<", -1}, {"s", -1}, {">", -1}, {"0", -1}, {"x", -1}, {"4", -1}, {"1", -1}}, true));
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("<s>", false, false), ids_of(v, {"<", "s", ">"}));
  EXPECT_EQ(t.encode("<0x41>", false, false), ids_of(v, {"<", "0", "x", "4", "1", ">"}));
  // ... but with parse_special the control token written in the text is recognised.
  EXPECT_EQ(t.encode("s<s>", false, true), ids_of(v, {"s", "<s>"}));
}

TEST(TokenizerSpm, UnusedPiecesAreSplitBackIntoTheirHalves) {
  Vocabulary v = no_prefix(tiny_spm_vocab(
      {{"a", -9}, {"b", -9}, {"c", -9}, {"ab", -1, TokenType::Unused}, {"abc", -2}}, false));
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("ab", false, false), ids_of(v, {"a", "b"}));
  // An unused piece may still be a step towards a used one.
  EXPECT_EQ(t.encode("abc", false, false), ids_of(v, {"abc"}));
}

TEST(TokenizerSpm, SpacePrefixAndSpaces) {
  Vocabulary v = tiny_spm_vocab({{kU, -1}, {"a", -1}, {kU + "a", 0}, {kU + kU, -2}}, true);
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("a", false, false), ids_of(v, {kU + "a"}));
  EXPECT_EQ(t.encode(" a", false, false), ids_of(v, {kU, kU + "a"}));
  EXPECT_EQ(t.encode("a a", false, false), ids_of(v, {kU + "a", kU + "a"}));
  EXPECT_TRUE(t.encode("", false, false).empty());
  // The space prefix follows every special token (each text stretch is tokenized alone).
  EXPECT_EQ(t.encode("a</s>a", false, true), ids_of(v, {kU + "a", "</s>", kU + "a"}));
  // Decoding removes exactly the one space the prefix added.
  for (const char* s : {"a", " a", "  a a ", " "}) {
    EXPECT_EQ(t.decode(t.encode(s, true, false)), s) << '"' << s << '"';
  }
  Vocabulary plain = no_prefix(v);
  const Tokenizer p = Tokenizer::from_vocabulary(plain);
  EXPECT_EQ(p.encode("a", false, false), ids_of(plain, {"a"}));
  EXPECT_EQ(p.decode(p.encode(" a", false, false)), " a");
}

TEST(TokenizerSpm, UserDefinedTokensAreAlwaysWhole) {
  Vocabulary v = no_prefix(
      tiny_spm_vocab({{"x", -1}, {"y", -1}, {"<tool>", 0, TokenType::UserDefined}}, true));
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("x<tool>y", false, false), ids_of(v, {"x", "<tool>", "y"}));
  EXPECT_EQ(t.decode(t.encode("x<tool>y", false, false)), "x<tool>y");
}

TEST(TokenizerSpm, StripFlagsSwallowWhitespaceAroundSpecialTokens) {
  Vocabulary v = tiny_spm_vocab({{"x", -1},
                                 {kU + "x", 0},
                                 {"<|u|>", 0, TokenType::Control},
                                 {"<|l|>", 0, TokenType::Control}},
                                true);
  const int32_t u = ids_of(v, {"<|u|>"})[0];
  const int32_t l = ids_of(v, {"<|l|>"})[0];
  v.rstrip_tokens.insert(u);
  v.lstrip_tokens.insert(l);
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("<|u|>\n \tx", false, true),
            (std::vector<int32_t>{u, ids_of(v, {kU + "x"})[0]}));
  EXPECT_EQ(t.encode("x \n<|l|>", false, true),
            (std::vector<int32_t>{ids_of(v, {kU + "x"})[0], l}));
}

TEST(TokenizerSpm, DecodeOptions) {
  Vocabulary v = tiny_spm_vocab({{"a", -1}, {kU + "a", 0}}, true);
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  const std::vector<int32_t> ids = {1, ids_of(v, {kU + "a"})[0], 2};
  EXPECT_EQ(t.decode(ids), "a");
  EXPECT_EQ(t.decode(ids, {.skip_bos = true, .render_special = true}), "a</s>");
  EXPECT_EQ(t.decode(ids, {.skip_bos = false, .render_special = true}), "<s> a</s>");
  EXPECT_EQ(t.decode(ids, {.strip_space_prefix = false}), " a");
  EXPECT_EQ(t.token_to_piece(ids_of(v, {"<0x41>"})[0]), "A");
  EXPECT_EQ(t.token_to_piece(1), "");
  EXPECT_EQ(t.token_to_piece(1, true), "<s>");
  // The CLI's view: every token with its piece, specials rendered.
  const std::vector<TokenPiece> pieces = tokenize_with_pieces(t, "a\xC3\xA9", true, false);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[0].id, 1);
  EXPECT_EQ(pieces[0].piece, "<s>");
  EXPECT_EQ(pieces[1].piece, " a");
  EXPECT_EQ(pieces[2].piece + pieces[3].piece, "\xC3\xA9");  // é by byte fallback
}

}  // namespace
}  // namespace kvforge
