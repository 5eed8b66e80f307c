// Gemma 4's vocabulary kind (tokenizer.ggml.model = "gemma4") on a small
// hand-built GGUF, so that CI checks its rules without the 15 MB vocabulary
// (tokenizer_gemma4_test.cpp checks the real one against llama.cpp):
// spaces spelled "▁" with no prefix, merges by rank over UTF-8 characters
// and across spaces, never across a newline; a run of newlines that is a
// token stays whole; characters without a token fall back to <0xAB> bytes;
// <bos> always added.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {
namespace {

using gguf::Value;
using Ids = std::vector<int32_t>;

constexpr int32_t kBos = 2;
constexpr int32_t kA = 7, kB = 8, kAb = 9, kSpace = 10, kSpaceAb = 11, kNl = 12, kNl2 = 13;
constexpr int32_t kByte0 = 15;  // <0x00>; <0xAB> is kByte0 + 0xAB

gguf::GgufWriter gemma4_writer() {
  std::vector<std::string> tokens = {"<pad>",
                                     "<eos>",
                                     "<bos>",
                                     "<unk>",
                                     "<|turn>",
                                     "<turn|>",
                                     "<|tool_response>",
                                     "a",
                                     "b",
                                     "ab",
                                     "\xE2\x96\x81",
                                     "\xE2\x96\x81"
                                     "ab",
                                     "\n",
                                     "\n\n",
                                     "\n\n\n\n"};
  std::vector<int32_t> types = {3, 3, 3, 3, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1};
  for (int b = 0; b < 256; ++b) {
    char spelling[8];
    std::snprintf(spelling, sizeof(spelling), "<0x%02X>", b);
    tokens.push_back(spelling);
    types.push_back(6);
  }
  gguf::GgufWriter w;
  w.set("tokenizer.ggml.model", Value::string("gemma4"));
  w.set("tokenizer.ggml.tokens", Value::string_array(tokens));
  w.set("tokenizer.ggml.token_type", Value::i32_array(types));
  // "\n\n\n\n" has no merge: only the whole-run rule makes it.
  w.set("tokenizer.ggml.merges", Value::string_array({"a b", "\xE2\x96\x81 ab", "\n \n"}));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(kBos));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(1));
  w.set("tokenizer.ggml.unknown_token_id", Value::u32(3));
  w.set("tokenizer.ggml.add_bos_token", Value::boolean(false));    // overridden, as llama.cpp does
  w.set("tokenizer.ggml.add_space_prefix", Value::boolean(true));  // ignored: no prefix
  return w;
}

Tokenizer tiny_gemma4_tokenizer() {
  const std::vector<uint8_t> bytes = gemma4_writer().to_bytes();
  return Tokenizer::from_gguf(gguf::GgufFile::from_bytes(bytes, "tiny-gemma4.gguf"));
}

TEST(TokenizerSpmStyleBpe, LoadsWithBosAndWithoutSpacePrefix) {
  const Tokenizer t = tiny_gemma4_tokenizer();
  EXPECT_EQ(t.kind(), VocabKind::SpmStyleBpe);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_space_prefix());
  EXPECT_EQ(t.eot_id(), 5);  // <turn|>
  EXPECT_EQ(t.eog_ids(), (Ids{1, 5, 6}));
  EXPECT_EQ(t.encode("ab", t.add_bos(), false), (Ids{kBos, kAb}));
}

TEST(TokenizerSpmStyleBpe, MergesSpanSpacesByRank) {
  const Tokenizer t = tiny_gemma4_tokenizer();
  // "ab▁ab": "a b" (rank 0) first, then "▁ ab" (rank 1).
  EXPECT_EQ(t.encode("ab ab", false, false), (Ids{kAb, kSpaceAb}));
  EXPECT_EQ(t.encode(" a b", false, false), (Ids{kSpace, kA, kSpace, kB}));
}

TEST(TokenizerSpmStyleBpe, NewlinesSplitAndWholeRunsStay) {
  const Tokenizer t = tiny_gemma4_tokenizer();
  EXPECT_EQ(t.encode("a\nb", false, false), (Ids{kA, kNl, kB}));  // "a b" not across "\n"
  EXPECT_EQ(t.encode("\n\n\n", false, false), (Ids{kNl2, kNl}));  // merged by rank
  EXPECT_EQ(t.encode("\n\n\n\n", false, false), (Ids{14}));       // a token: whole
  EXPECT_EQ(t.encode("ab\n\n\n\nab", false, false), (Ids{kAb, 14, kAb}));
}

TEST(TokenizerSpmStyleBpe, UnknownCharactersBecomeBytesAndDecodeBack) {
  const Tokenizer t = tiny_gemma4_tokenizer();
  const std::string text = "a \xC3\xA9\tb";  // "a é\tb"
  const Ids ids = t.encode(text, true, false);
  EXPECT_EQ(ids, (Ids{kBos, kA, kSpace, kByte0 + 0xC3, kByte0 + 0xA9, kByte0 + '\t', kB}));
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_EQ(t.token_to_piece(kSpaceAb), " ab");
  // Ill-formed UTF-8 is refused, as for every vocabulary kind.
  EXPECT_THROW(t.encode("a\xC3", false, false), TokenizerError);
}

TEST(TokenizerSpmStyleBpe, SpecialTokensInText) {
  const Tokenizer t = tiny_gemma4_tokenizer();
  EXPECT_EQ(t.encode("<|turn>ab<turn|>", false, true), (Ids{4, kAb, 5}));
  // Control tokens are plain text without parse_special; user-defined ones never are.
  const Ids plain = t.encode("<turn|><|tool_response>", false, false);
  EXPECT_EQ(plain.back(), 6);
  EXPECT_GT(plain.size(), 2u);
}

}  // namespace
}  // namespace kvforge
