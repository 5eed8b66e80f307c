// Gemma 4's vocabulary (tokenizer.ggml.model = "gemma4") against llama.cpp.
//
// - llama.cpp's own vectors (models/ggml-vocab-gemma-4.gguf.inp/.out, the
//   Hugging Face tokenizer's ids, no BOS);
// - held-out strings (data/gemma-4-heldout.inp/.out: unicode, emoji, code,
//   runs of spaces and newlines, CJK, control characters, special-token
//   text) run through the peer's llama-tokenize (de3ff815) with
//   `-f FILE --no-escape --ids`, plus `--no-bos --no-parse-special` for the
//   strings marked "plain:"; those marked "special:" keep the vocabulary's
//   BOS (forced on for Gemma 4) and parse special tokens.
//
// The vocabulary (15 MB) is not committed: the test reads it from the shared
// test data (vocab/ggml-vocab-gemma-4.gguf with its .inp/.out, copied from
// llama.cpp's models/ folder) or from KVFORGE_GEMMA4_VOCAB, and skips,
// naming it, where neither holds it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"
#include "testdata.h"
#include "tokenizer_vectors.h"

namespace kvforge {
namespace {

std::filesystem::path gemma4_vocab() {
  if (const char* env = std::getenv("KVFORGE_GEMMA4_VOCAB")) return env;
  return kvforge::testing::testdata("vocab/ggml-vocab-gemma-4.gguf");
}

// Loaded once (about 2 s for 262,144 tokens and 514,906 merges).
const Tokenizer& gemma4_tokenizer() {
  static const Tokenizer t = Tokenizer::from_gguf(gguf::GgufFile::open(gemma4_vocab()));
  return t;
}

#define REQUIRE_GEMMA4_VOCAB()                                                              \
  do {                                                                                      \
    if (!std::filesystem::exists(gemma4_vocab()))                                           \
      GTEST_SKIP() << gemma4_vocab() << " (and .inp/.out) not found: copy them from "       \
                   << "llama.cpp's models/ folder or point KVFORGE_GEMMA4_VOCAB at a copy"; \
  } while (0)

TEST(TokenizerGemma4, LoadsAsItsOwnKind) {
  REQUIRE_GEMMA4_VOCAB();
  const Tokenizer& t = gemma4_tokenizer();
  EXPECT_EQ(t.kind(), VocabKind::SpmStyleBpe);
  EXPECT_EQ(t.n_vocab(), 262144);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_space_prefix());
  EXPECT_EQ(t.token_text(t.bos_id()), "<bos>");
  EXPECT_EQ(t.token_text(t.eot_id()), "<turn|>");
  // llama.cpp's end-of-generation set for this vocabulary.
  std::vector<std::string> eog;
  for (int32_t id : t.eog_ids()) eog.push_back(t.token_text(id));
  EXPECT_EQ(eog, (std::vector<std::string>{"<eos>", "<|tool_response>", "<turn|>"}));
}

TEST(TokenizerGemma4, EncodeMatchesLlamaCppVectors) {
  REQUIRE_GEMMA4_VOCAB();
  const Tokenizer& t = gemma4_tokenizer();
  const auto vectors = kvforge::testing::load_tokenizer_vectors(gemma4_vocab());
  ASSERT_GE(vectors.size(), 40u);
  for (size_t i = 0; i < vectors.size(); ++i) {
    SCOPED_TRACE("vector " + std::to_string(i) + " '" + vectors[i].text + "'");
    const std::vector<int32_t> ids = t.encode(vectors[i].text, false, /*parse_special=*/false);
    EXPECT_EQ(ids, vectors[i].ids);
    EXPECT_EQ(t.decode(ids), vectors[i].text);
  }
}

TEST(TokenizerGemma4, EncodeMatchesLlamaTokenizeOnHeldOutStrings) {
  REQUIRE_GEMMA4_VOCAB();
  const Tokenizer& t = gemma4_tokenizer();
  const auto vectors = kvforge::testing::load_tokenizer_vectors(
      kvforge::testing::source_dir() / "tests/app/tokenizer/data/gemma-4-heldout");
  ASSERT_EQ(vectors.size(), 40u);
  for (size_t i = 0; i < vectors.size(); ++i) {
    const std::string& line = vectors[i].text;
    const bool special = line.starts_with("special:");
    ASSERT_TRUE(special || line.starts_with("plain:")) << line;
    const std::string text = line.substr(line.find(':') + 1);
    SCOPED_TRACE("held-out " + std::to_string(i) + " '" + text + "'");
    const std::vector<int32_t> ids = t.encode(text, special && t.add_bos(), special);
    EXPECT_EQ(ids, vectors[i].ids);
    // The text comes back byte for byte, special tokens rendered as their
    // spelling, the added <bos> included; a "▁" written in the text reads
    // back as a space, as in llama.cpp (the vocabulary spells spaces so).
    DecodeOptions rendered;
    rendered.skip_bos = false;
    rendered.render_special = true;
    std::string expected = special ? "<bos>" + text : text;
    const std::string bar = "\xE2\x96\x81";
    for (size_t p = expected.find(bar); p != std::string::npos; p = expected.find(bar))
      expected.replace(p, bar.size(), " ");
    EXPECT_EQ(t.decode(ids, rendered), expected);
  }
}

}  // namespace
}  // namespace kvforge
