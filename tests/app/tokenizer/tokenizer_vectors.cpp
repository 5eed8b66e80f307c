#include "tokenizer_vectors.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kvforge::testing {

namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<TokenizerVector> load_tokenizer_vectors(const std::filesystem::path& gguf_path) {
  const std::string inputs = read_all(gguf_path.string() + ".inp");
  const std::string outputs = read_all(gguf_path.string() + ".out");
  const std::string separator = "\n__ggml_vocab_test__\n";

  std::vector<TokenizerVector> vectors;
  size_t pos = 0;
  while (pos < inputs.size()) {
    // The last string may lack its separator (as in llama.cpp's Gemma 4
    // file); llama.cpp's test reader takes it as the final string.
    const size_t end = std::min(inputs.find(separator, pos), inputs.size());
    vectors.push_back({inputs.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }

  std::istringstream lines(outputs);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (i >= vectors.size()) {
      throw std::runtime_error(gguf_path.string() + ".out has more lines than .inp has strings");
    }
    std::istringstream ids(line);
    int32_t id = 0;
    while (ids >> id) vectors[i].ids.push_back(id);
    ++i;
  }
  if (i != vectors.size()) {
    throw std::runtime_error(gguf_path.string() + ".out has " + std::to_string(i) + " lines for " +
                             std::to_string(vectors.size()) + " strings");
  }
  return vectors;
}

}  // namespace kvforge::testing
