// The five reference vocabularies against the token ids Hugging Face's
// tokenizers produced for the same strings (add_special_tokens=False), and
// decode(encode(s)) == s on those strings.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"
#include "testdata.h"
#include "tokenizer_vectors.h"

namespace kvforge {
namespace {

std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class ReferenceVectors : public ::testing::TestWithParam<const char*> {
 protected:
  static std::filesystem::path vocab_path() {
    return kvforge::testing::testdata(std::string("vocab/ggml-vocab-") + GetParam() + ".gguf");
  }
};

TEST_P(ReferenceVectors, EncodeMatchesHuggingFace) {
  KVFORGE_REQUIRE_TESTDATA();
  const auto file = gguf::GgufFile::open(vocab_path());
  const auto start = std::chrono::steady_clock::now();
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto vectors = kvforge::testing::load_tokenizer_vectors(vocab_path());
  ASSERT_EQ(vectors.size(), 46u);

  size_t passed = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    const std::vector<int32_t> got =
        tokenizer.encode(vectors[i].text, /*add_bos=*/false, /*parse_special=*/false);
    // No vector contains special-token text, so parse_special must not matter.
    EXPECT_EQ(tokenizer.encode(vectors[i].text, false, /*parse_special=*/true), got);
    if (got == vectors[i].ids) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " vector " << i << " '" << vectors[i].text << "'\n  expected "
                    << ids_to_string(vectors[i].ids) << "\n  got      " << ids_to_string(got);
    }
  }
  std::printf("[ vectors  ] %s: %zu/%zu match, tokenizer built in %.3f s\n", GetParam(), passed,
              vectors.size(), load_s);
  EXPECT_EQ(passed, vectors.size());
}

TEST_P(ReferenceVectors, DecodeRestoresText) {
  KVFORGE_REQUIRE_TESTDATA();
  const Tokenizer tokenizer = Tokenizer::from_gguf(gguf::GgufFile::open(vocab_path()));
  for (const auto& v : kvforge::testing::load_tokenizer_vectors(vocab_path())) {
    // From the reference ids, so this checks decoding on its own ...
    EXPECT_EQ(tokenizer.decode(v.ids), v.text) << GetParam();
    // ... and through our encoder, with BOS added and skipped.
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(v.text, tokenizer.bos_id() >= 0, false)), v.text)
        << GetParam();
  }
}

TEST_P(ReferenceVectors, ConcurrentEncodersAgree) {
  KVFORGE_REQUIRE_TESTDATA();
  // One Tokenizer shared by several threads, as the server uses it.
  const Tokenizer tokenizer = Tokenizer::from_gguf(gguf::GgufFile::open(vocab_path()));
  const auto vectors = kvforge::testing::load_tokenizer_vectors(vocab_path());
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (const auto& v : vectors) {
          if (tokenizer.encode(v.text, false, false) != v.ids) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(mismatches.size(), 0));
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, ReferenceVectors,
                         ::testing::Values("llama-spm", "phi-3", "llama-bpe", "gpt-2", "qwen2"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kvforge
