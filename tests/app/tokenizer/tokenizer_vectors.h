// Loading the reference tokenizer vectors of ../shared/testdata/vocab:
// X.gguf.inp holds strings each followed by "\n__ggml_vocab_test__\n" (the
// last one's may be missing),
// X.gguf.out one line of space-separated token ids per string.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kvforge::testing {

struct TokenizerVector {
  std::string text;
  std::vector<int32_t> ids;
};

// Throws std::runtime_error if the files are missing or their counts disagree.
std::vector<TokenizerVector> load_tokenizer_vectors(const std::filesystem::path& gguf_path);

}  // namespace kvforge::testing
