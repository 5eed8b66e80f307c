// Long inputs must not take quadratic time: one 200k-character "word" is the
// worst case for both merge loops (every position is a merge candidate).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"
#include "testdata.h"

namespace kvforge {
namespace {

double seconds_to_encode(const Tokenizer& t, const std::string& text, size_t* n_tokens) {
  const auto start = std::chrono::steady_clock::now();
  *n_tokens = t.encode(text, false, false).size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(TokenizerLongInput, EncodesInNearLinearTime) {
  KVFORGE_REQUIRE_TESTDATA();
  // A quadratic merge loop needs ~10^10 steps here (minutes); ours needs well under a second.
  const std::string letters(200000, 'a');
  std::string emoji;
  for (int i = 0; i < 50000; ++i) emoji += "\xF0\x9F\xA6\x99";  // byte fallback / byte tokens
  for (const char* name : {"llama-spm", "llama-bpe"}) {
    const Tokenizer t = Tokenizer::from_gguf(gguf::GgufFile::open(
        kvforge::testing::testdata(std::string("vocab/ggml-vocab-") + name + ".gguf")));
    for (const std::string* text : {&letters, static_cast<const std::string*>(&emoji)}) {
      size_t n_tokens = 0;
      const double s = seconds_to_encode(t, *text, &n_tokens);
      std::printf("[ long     ] %s: %zu bytes -> %zu tokens in %.3f s\n", name, text->size(),
                  n_tokens, s);
      EXPECT_GT(n_tokens, 0u);
      EXPECT_LE(n_tokens, text->size() + 1);  // at worst one per byte, plus SentencePiece's "▁"
      EXPECT_LT(s, 30.0) << name;             // generous: sanitizer builds on a busy machine
      EXPECT_EQ(t.decode(t.encode(*text, false, false)), *text);
    }
  }
}

}  // namespace
}  // namespace kvforge
