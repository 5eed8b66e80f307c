// Special tokens on the real vocabularies: chat-template markers with
// parse_special, Phi-3's whitespace rule, end-of-generation ids, streaming.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/tokenizer/streaming_detokenizer.h"
#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"
#include "testdata.h"

namespace kvforge {
namespace {

Tokenizer load(const std::string& name) {
  return Tokenizer::from_gguf(
      gguf::GgufFile::open(kvforge::testing::testdata("vocab/ggml-vocab-" + name + ".gguf")));
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(TokenizerSpecialTokens, Llama3ChatMarkers) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer t = load("llama-bpe");
  EXPECT_EQ(t.kind(), VocabKind::ByteLevelBpe);
  EXPECT_EQ(t.n_vocab(), 128256);
  EXPECT_EQ(t.bos_id(), 128000);
  EXPECT_TRUE(t.add_bos());  // LLaMA-3 wants <|begin_of_text|> although the key is absent
  EXPECT_EQ(t.eot_id(), 128009);
  const std::string chat =
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>";
  EXPECT_EQ(t.encode(chat, false, true), concat({{128000, 128006},
                                                 t.encode("user", false, false),
                                                 {128007},
                                                 t.encode("\n\nHi!", false, false),
                                                 {128009}}));
  EXPECT_EQ(t.encode(chat, true, true).front(), 128000);
  // Without parse_special the markers are plain text and round-trip as such.
  const std::vector<int32_t> literal = t.encode(chat, false, false);
  for (int32_t id : literal) EXPECT_LT(id, 128000);
  EXPECT_EQ(t.decode(literal), chat);
  EXPECT_EQ(t.decode(t.encode(chat, false, true), {.skip_bos = false, .render_special = true}),
            chat);
}

TEST(TokenizerSpecialTokens, Phi3SwallowsWhitespaceAfterChatMarkers) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer t = load("phi-3");
  // Ids llama.cpp produces for this turn (its Phi-3 rstrip rule; the
  // Hugging Face tokenizer.json marks these added tokens rstrip).
  EXPECT_EQ(t.encode("<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n", false, true),
            (std::vector<int32_t>{32010, 317, 21554, 13, 17628, 32007, 32001}));
  EXPECT_EQ(t.eos_id(), 32000);
  EXPECT_EQ(t.eot_id(), 32007);
  EXPECT_TRUE(t.is_eog(32000));
  EXPECT_TRUE(t.is_eog(32007));
  EXPECT_FALSE(t.is_eog(32010));
}

TEST(TokenizerSpecialTokens, OtherSentencePieceModelsKeepWhitespace) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer t = load("llama-spm");
  EXPECT_EQ(t.encode("</s>\nhi", false, true), concat({{2}, t.encode("\nhi", false, false)}));
  EXPECT_EQ(t.encode("</s>\nhi", false, true)[1], 29871);  // "▁" then "<0x0A>"
  EXPECT_TRUE(t.add_bos());
  EXPECT_TRUE(t.add_space_prefix());
  EXPECT_EQ(t.eot_id(), -1);
  EXPECT_EQ(t.eog_ids(), (std::vector<int32_t>{2}));
}

TEST(TokenizerSpecialTokens, EndOfGenerationSets) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer qwen = load("qwen2");
  EXPECT_EQ(qwen.eot_id(), 151645);  // <|im_end|>
  EXPECT_EQ(qwen.eog_ids(), (std::vector<int32_t>{151643, 151645}));
  EXPECT_FALSE(qwen.add_bos());
  EXPECT_EQ(qwen.encode("<|im_start|>user\nhi<|im_end|>", false, true).front(), 151644);
  const Tokenizer llama3 = load("llama-bpe");
  // <|end_of_text|> (EOS) and <|eot_id|>; LLaMA-3.0 has no <|eom_id|>.
  EXPECT_EQ(llama3.eog_ids(), (std::vector<int32_t>{128001, 128009}));
  const Tokenizer gpt2 = load("gpt-2");
  EXPECT_EQ(gpt2.eog_ids(), (std::vector<int32_t>{50256}));
}

// Pushing tokens one by one never emits a broken character, and adds up to decode().
void expect_streaming_matches_decode(const Tokenizer& t, const std::string& text) {
  const std::vector<int32_t> ids = t.encode(text, t.add_bos(), false);
  StreamingDetokenizer stream(t);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    EXPECT_EQ(to_valid_utf8(piece), piece);
    streamed += piece;
  }
  streamed += stream.flush();
  EXPECT_EQ(streamed, t.decode(ids));
  EXPECT_EQ(streamed, text);
}

TEST(TokenizerStreaming, ByteFallbackCharactersAppearWhenComplete) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer t = load("llama-spm");
  // "🦙" has no piece in LLaMA-2: it is <0xF0> <0x9F> <0xA6> <0x99>.
  const std::vector<int32_t> ids = t.encode("a\xF0\x9F\xA6\x99", false, false);
  ASSERT_EQ(ids, (std::vector<int32_t>{263, 243, 162, 169, 156}));
  StreamingDetokenizer stream(t);
  EXPECT_EQ(stream.push(ids[0]), "a");
  EXPECT_EQ(stream.push(ids[1]), "");
  EXPECT_EQ(stream.push(ids[2]), "");
  EXPECT_EQ(stream.push(ids[3]), "");
  EXPECT_EQ(stream.push(ids[4]), "\xF0\x9F\xA6\x99");
  // Cut off mid-character: the stream ends with U+FFFD.
  stream.reset();
  EXPECT_EQ(stream.push(ids[0]), "a");
  EXPECT_EQ(stream.push(ids[1]), "");
  EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");
  // Invalid on its own: a continuation byte token right after text.
  stream.reset();
  std::string text = stream.push(ids[0]);
  text += stream.push(ids[2]);
  text += stream.push(ids[0]);
  EXPECT_EQ(text, "a\xEF\xBF\xBD a");
}

TEST(TokenizerStreaming, AllVocabulariesStreamLosslessly) {
  KVFORGE_REQUIRE_TESTDATA();
  const std::string text =
      "Cửa Việt 🚀 (normal) 😶\u200d🌫️ 我想在apple工作1314151天～  \n\t ока "
      "___ ";
  for (const char* name : {"llama-spm", "phi-3", "llama-bpe", "gpt-2", "qwen2"}) {
    SCOPED_TRACE(name);
    expect_streaming_matches_decode(load(name), text);
  }
}

TEST(TokenizerErrors, BadInputIsAClearError) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer t = load("gpt-2");
  try {
    t.encode("ok\xC3(", false, false);
    FAIL() << "expected TokenizerError";
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.token_to_piece(-1), TokenizerError);
  EXPECT_THROW(t.token_to_piece(t.n_vocab()), TokenizerError);
  EXPECT_THROW(t.decode(std::vector<int32_t>{1, 50257}), TokenizerError);
  const Tokenizer qwen = load("qwen2");
  EXPECT_EQ(qwen.bos_id(), 151643);
}

}  // namespace
}  // namespace kvforge
