// Qwen 3.5's vocabulary (tokenizer.ggml.pre = qwen35: Qwen2's split with
// combining marks kept in letter runs) against llama.cpp's test vectors for
// it (models/ggml-vocab-qwen35.gguf.inp/.out), and decode(encode(s)) == s.
// The files come from the same llama.cpp models/ folder as the other
// vocabularies of ../shared/testdata/vocab; the test skips, naming them,
// where that folder does not hold them yet. KVFORGE_QWEN35_VOCAB points it at
// another copy of the .gguf (its .inp/.out beside it).
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

TEST(TokenizerQwen35, EncodeMatchesLlamaCppVectors) {
  const char* env = std::getenv("KVFORGE_QWEN35_VOCAB");
  if (!env) KVFORGE_REQUIRE_TESTDATA();
  const std::filesystem::path vocab =
      env ? std::filesystem::path(env) : kvforge::testing::testdata("vocab/ggml-vocab-qwen35.gguf");
  if (!std::filesystem::exists(vocab))
    GTEST_SKIP() << vocab << " (and .inp/.out) not in the shared test data: copy them from "
                 << "llama.cpp's models/ folder";
  const Tokenizer tokenizer = Tokenizer::from_gguf(gguf::GgufFile::open(vocab));
  const auto vectors = kvforge::testing::load_tokenizer_vectors(vocab);
  ASSERT_GE(vectors.size(), 50u);
  for (size_t i = 0; i < vectors.size(); ++i) {
    SCOPED_TRACE("vector " + std::to_string(i) + " '" + vectors[i].text + "'");
    const std::vector<int32_t> ids = tokenizer.encode(vectors[i].text, /*add_bos=*/false,
                                                      /*parse_special=*/false);
    EXPECT_EQ(ids, vectors[i].ids);
    EXPECT_EQ(tokenizer.decode(ids), vectors[i].text);
  }
}

}  // namespace
}  // namespace kvforge
