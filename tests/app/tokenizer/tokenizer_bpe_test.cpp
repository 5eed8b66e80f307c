// Byte-level BPE and regex pre-tokenization on hand-built vocabularies.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/tokenizer/pre_tokenizer.h"
#include "app/tokenizer/tokenizer.h"
#include "tokenizer_tiny_vocab.h"

namespace kvforge {
namespace {

using kvforge::testing::ids_of;
using kvforge::testing::tiny_bpe_vocab;

std::vector<std::string> words_of(PreTokenizerKind kind, std::string_view text) {
  std::vector<std::string_view> views;
  PreTokenizer(kind).split(text, views);
  return {views.begin(), views.end()};
}

using Words = std::vector<std::string>;

TEST(TokenizerPreTokenizer, Gpt2Pattern) {
  EXPECT_EQ(words_of(PreTokenizerKind::Gpt2, "Hello world's  3333 x!!"),
            (Words{"Hello", " world", "'s", " ", " 3333", " x", "!!"}));
  // Contractions are lowercase only; a space run before a word leaves one space to the word.
  EXPECT_EQ(words_of(PreTokenizerKind::Gpt2, "I'VE   a\n\n"),
            (Words{"I", "'", "VE", "  ", " a", "\n\n"}));
  EXPECT_EQ(words_of(PreTokenizerKind::Gpt2, "\xD0\xBD\xD0\xB5 \xE4\xB8\xAD"),  // "не 中"
            (Words{"\xD0\xBD\xD0\xB5", " \xE4\xB8\xAD"}));
}

TEST(TokenizerPreTokenizer, Llama3Pattern) {
  // Numbers in groups of at most three, contractions in any case, one
  // punctuation character may lead a letter run.
  EXPECT_EQ(words_of(PreTokenizerKind::Llama3, "12345 I'VE .net"),
            (Words{"123", "45", " I", "'VE", " .", "net"}));
  EXPECT_EQ(words_of(PreTokenizerKind::Llama3, "a  \n\n b"), (Words{"a", "  \n\n", " b"}));
  EXPECT_EQ(words_of(PreTokenizerKind::Llama3, "x...\n\ny"), (Words{"x", "...\n\n", "y"}));
}

TEST(TokenizerPreTokenizer, Qwen2PatternSplitsEveryDigit) {
  EXPECT_EQ(words_of(PreTokenizerKind::Qwen2, "x1234"), (Words{"x", "1", "2", "3", "4"}));
}

TEST(TokenizerPreTokenizer, WordsCoverTheText) {
  const std::string text = "\t  mixed: \xF0\x9F\xA6\x99 text,\r\n 42\xE2\x80\x8B end ";
  for (PreTokenizerKind kind :
       {PreTokenizerKind::Gpt2, PreTokenizerKind::Llama3, PreTokenizerKind::Qwen2}) {
    std::string joined;
    for (const std::string& w : words_of(kind, text)) {
      EXPECT_FALSE(w.empty());
      joined += w;
    }
    EXPECT_EQ(joined, text);
  }
}

TEST(TokenizerPreTokenizer, KnownNames) {
  EXPECT_EQ(pre_tokenizer_kind("llama-bpe"), PreTokenizerKind::Llama3);
  EXPECT_EQ(pre_tokenizer_kind("qwen2"), PreTokenizerKind::Qwen2);
  EXPECT_EQ(pre_tokenizer_kind("gpt-2"), PreTokenizerKind::Gpt2);
  EXPECT_EQ(pre_tokenizer_kind("default"), PreTokenizerKind::Gpt2);
  EXPECT_EQ(pre_tokenizer_kind("made-up"), std::nullopt);
}

TEST(TokenizerBpe, LowerRankMergesFirst) {
  Vocabulary ab_first = tiny_bpe_vocab({"ab", "bc"}, {"a b", "b c"});
  EXPECT_EQ(Tokenizer::from_vocabulary(ab_first).encode("abc", false, false),
            ids_of(ab_first, {"ab", "c"}));
  Vocabulary bc_first = tiny_bpe_vocab({"ab", "bc"}, {"b c", "a b"});
  EXPECT_EQ(Tokenizer::from_vocabulary(bc_first).encode("abc", false, false),
            ids_of(bc_first, {"a", "bc"}));
}

TEST(TokenizerBpe, EqualPairsMergeLeftmostFirst) {
  Vocabulary v = tiny_bpe_vocab({"aa"}, {"a a"});
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("aaa", false, false), ids_of(v, {"aa", "a"}));
  EXPECT_EQ(t.encode("aaaaa", false, false), ids_of(v, {"aa", "aa", "a"}));
}

TEST(TokenizerBpe, SpacesAndBytesUseTheByteLevelSpelling) {
  // " he" spelled "Ġhe"; merges never cross the pre-tokenizer's word boundary.
  Vocabulary v = tiny_bpe_vocab({"he", "\xC4\xA0he", "hehe"}, {"h e", "\xC4\xA0 he", "he he"});
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("he he", false, false), ids_of(v, {"he", "\xC4\xA0he"}));
  EXPECT_EQ(t.encode("hehe", false, false), ids_of(v, {"hehe"}));
  // A 4-byte character with no merges is four byte tokens (ids = bytes here).
  EXPECT_EQ(t.encode("\xF0\x9F\xA6\x99", false, false),
            (std::vector<int32_t>{0xF0, 0x9F, 0xA6, 0x99}));
  for (const char* s : {"he he", "\xF0\x9F\xA6\x99 \n\t x", ""}) {
    EXPECT_EQ(t.decode(t.encode(s, false, false)), s);
  }
}

TEST(TokenizerBpe, IgnoreMergesTakesWholeWordsForLlama3) {
  // "abc" is a token but no merge sequence builds it.
  const std::vector<std::string> extra = {"ab", "abc"};
  const std::vector<std::string> merges = {"a b"};
  Vocabulary gpt2 = tiny_bpe_vocab(extra, merges, "gpt-2");
  EXPECT_EQ(Tokenizer::from_vocabulary(gpt2).encode("abc", false, false),
            ids_of(gpt2, {"ab", "c"}));
  Vocabulary llama3 = tiny_bpe_vocab(extra, merges, "llama-bpe");
  EXPECT_EQ(Tokenizer::from_vocabulary(llama3).encode("abc", false, false),
            ids_of(llama3, {"abc"}));
}

TEST(TokenizerBpe, SpecialTokensAndEndOfGeneration) {
  Vocabulary v = tiny_bpe_vocab({"<|im_end|>", "<|endoftext|>"}, {"a b"}, "qwen2");
  const int32_t im_end = ids_of(v, {"<|im_end|>"})[0];
  const int32_t eot = ids_of(v, {"<|endoftext|>"})[0];
  v.types[im_end] = TokenType::Control;
  v.types[eot] = TokenType::Control;
  v.eos_id = eot;
  const Tokenizer t = Tokenizer::from_vocabulary(v);
  EXPECT_EQ(t.encode("a<|im_end|>", false, true), (std::vector<int32_t>{'a', im_end}));
  // Without parse_special the text is just text, and decodes back to itself.
  const std::vector<int32_t> literal = t.encode("a<|im_end|>", false, false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), im_end), 0);
  EXPECT_EQ(t.decode(literal), "a<|im_end|>");
  EXPECT_TRUE(t.is_eog(eot));
  EXPECT_TRUE(t.is_eog(im_end));  // found by its spelling
  EXPECT_FALSE(t.is_eog('a'));
  EXPECT_EQ(t.decode(std::vector<int32_t>{'a', im_end}), "a");
  EXPECT_EQ(t.decode(std::vector<int32_t>{'a', im_end}, {.render_special = true}), "a<|im_end|>");
}

TEST(TokenizerBpe, UnknownPreTokenizerIsAnError) {
  try {
    Tokenizer::from_vocabulary(tiny_bpe_vocab({}, {"a b"}, "mystery-pre"));
    FAIL() << "expected TokenizerError";
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("mystery-pre"), std::string::npos) << e.what();
  }
}

// The end-of-turn markers of the chat families issue 24 runs (gemma,
// llama 3, phi-3, qwen) end generation when the file names no EOT token:
// each is found by its spelling.
TEST(TokenizerBpe, FamilyEndOfTurnMarkersEndGeneration) {
  for (const char* marker : {"<end_of_turn>", "<|eot_id|>", "<|end|>", "<|im_end|>"}) {
    SCOPED_TRACE(marker);
    Vocabulary v = tiny_bpe_vocab({marker, "<eos>"}, {"a b"}, "gpt-2");
    const int32_t id = ids_of(v, {marker})[0];
    const int32_t eos = ids_of(v, {"<eos>"})[0];
    v.types[id] = TokenType::Control;
    v.types[eos] = TokenType::Control;
    v.eos_id = eos;
    const Tokenizer t = Tokenizer::from_vocabulary(v);
    EXPECT_TRUE(t.is_eog(id));
    EXPECT_TRUE(t.is_eog(eos));
    EXPECT_EQ(t.encode(std::string("a") + marker, false, true), (std::vector<int32_t>{'a', id}));
  }
}

}  // namespace
}  // namespace kvforge
