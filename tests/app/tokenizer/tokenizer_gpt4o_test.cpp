// The "gpt-4o" pre-tokenizer (tiktoken o200k's split: gpt-oss, Llama 4)
// against llama.cpp. No vocabulary of that kind is among the shared test
// vocabularies, so the test pairs Llama 3's (vocab/ggml-vocab-llama-bpe.gguf)
// with tokenizer.ggml.pre = "gpt-4o", as
// tools/tokenizer_goldens/gpt4o_heldout.py did to make
// data/gpt-4o-split.inp/.out with the peer's llama-tokenize (de3ff815): the
// tokens and merges are Llama 3's, the split before merging is gpt-4o's.
// Skips, naming the file, where the shared test data is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/tokenizer/pre_tokenizer.h"
#include "app/tokenizer/tokenizer.h"
#include "app/tokenizer/vocabulary_loader.h"
#include "core/gguf/gguf_file.h"
#include "testdata.h"
#include "tokenizer_vectors.h"

namespace kvforge {
namespace {

Tokenizer llama3_vocabulary_with_pre(const std::string& pre) {
  Vocabulary v = load_vocabulary(
      gguf::GgufFile::open(kvforge::testing::testdata("vocab/ggml-vocab-llama-bpe.gguf")));
  v.pre = pre;
  return Tokenizer::from_vocabulary(std::move(v));
}

TEST(TokenizerGpt4o, SplitMatchesLlamaTokenize) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer gpt4o = llama3_vocabulary_with_pre("gpt-4o");
  const PreTokenizer gpt4o_split(PreTokenizerKind::Gpt4o), llama3_split(PreTokenizerKind::Llama3);
  const auto vectors = kvforge::testing::load_tokenizer_vectors(
      kvforge::testing::source_dir() / "tests/app/tokenizer/data/gpt-4o-split");
  ASSERT_GE(vectors.size(), 60u);
  int differs_from_llama3 = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    SCOPED_TRACE("vector " + std::to_string(i) + " '" + vectors[i].text + "'");
    const std::vector<int32_t> ids = gpt4o.encode(vectors[i].text, false, false);
    EXPECT_EQ(ids, vectors[i].ids);
    EXPECT_EQ(gpt4o.decode(ids), vectors[i].text);
    std::vector<std::string_view> a, b;
    gpt4o_split.split(vectors[i].text, a);
    llama3_split.split(vectors[i].text, b);
    differs_from_llama3 += a != b;
  }
  // The strings must tell the two splits apart, or they test nothing of gpt-4o's.
  EXPECT_GE(differs_from_llama3, 8);
}

TEST(TokenizerGpt4o, Llama4IsTheSameSplit) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer gpt4o = llama3_vocabulary_with_pre("gpt-4o");
  const Tokenizer llama4 = llama3_vocabulary_with_pre("llama4");
  const std::string text = "HelloWorld McDONALD'S a//b\n/ ÉCOLE école 1234567";
  EXPECT_EQ(llama4.encode(text, false, false), gpt4o.encode(text, false, false));
}

}  // namespace
}  // namespace kvforge
