// llama.cpp's llama-embedding on a model file, as
// tools/embedding_golden/make_embedding_golden.py writes it
// (tests/app/embedding/data/NAME_embeddings.json): per case a pooling, a
// text, the token ids llama.cpp embedded and its L2-normalised embedding; and
// the check of kvforge's Embedder against it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/embedding/embedder.h"
#include "app/tokenizer/tokenizer.h"
#include "testdata.h"

namespace kvforge::testing {

struct EmbeddingCase {
  Pooling pooling;
  std::string text;
  std::vector<int32_t> tokens;  // with BOS, as llama.cpp's vocabulary adds it
  std::vector<float> embedding;
};

struct EmbeddingGolden {
  std::filesystem::path model;  // the file llama.cpp read
  std::vector<EmbeddingCase> cases;
};

inline EmbeddingGolden read_embedding_golden(const std::string& name) {
  const std::filesystem::path path =
      source_dir() / "tests/app/embedding/data" / (name + "_embeddings.json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  const nlohmann::json j = nlohmann::json::parse(in);
  EmbeddingGolden golden{source_dir() / j["model"].get<std::string>(), {}};
  for (const auto& c : j["cases"])
    golden.cases.push_back({*pooling_from_name(c["pooling"].get<std::string>()),
                            c["text"].get<std::string>(), c["tokens"].get<std::vector<int32_t>>(),
                            c["embedding"].get<std::vector<float>>()});
  return golden;
}

inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// How far a unit vector may be from llama.cpp's: per component, and 1 - cosine.
struct EmbeddingBound {
  double max_diff;
  double one_minus_cosine;
};

// f16 weights (the default model), K/V f32 on both sides: llama.cpp rounds
// the activations to f16 (11-bit mantissa, relative error 2^-11) for its f16
// dot products where kvforge keeps them f32.
constexpr EmbeddingBound kF16WeightsBound{1e-4, 1e-7};
// f32 throughout (the random-weight files): the engines differ only in the
// order of their sums (relative ~sqrt(n)·2^-24 per dot product of n = 64..128
// terms, a few dozen in series, on components below 0.3) and by the golden's
// 7 printed decimals (5e-8). The figures measured are in docs/server.md.
constexpr EmbeddingBound kF32Bound{2e-6, 1e-10};

// How many cases were checked, and the worst of them.
struct EmbeddingCheck {
  int cases = 0;
  double max_diff = 0, one_minus_cosine = 0;
  void add(const EmbeddingCheck& o) {
    cases += o.cases;
    max_diff = std::max(max_diff, o.max_diff);
    one_minus_cosine = std::max(one_minus_cosine, o.one_minus_cosine);
  }
};

// Every case of `golden` with the embedder's pooling: the tokenizer gives
// llama.cpp's ids (llama-embedding adds BOS and parses special tokens), and
// the embedding is within `bound`.
inline EmbeddingCheck expect_golden_cases(const Model& model, const Embedder& embedder,
                                          const EmbeddingGolden& golden, EmbeddingBound bound) {
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  EmbeddingCheck check;
  for (const EmbeddingCase& c : golden.cases) {
    if (c.pooling != embedder.pooling()) continue;
    SCOPED_TRACE(std::string(pooling_name(c.pooling)) + ": " + c.text);
    ++check.cases;
    const std::vector<int32_t> tokens = tok.encode(c.text, true, true);
    EXPECT_EQ(tokens, c.tokens);
    const std::vector<float> got = embedder.embed(tokens);
    if (got.size() != c.embedding.size()) {
      ADD_FAILURE() << got.size() << " dimensions, llama.cpp " << c.embedding.size();
      continue;
    }
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      max_diff = std::max(max_diff, double(std::fabs(got[i] - c.embedding[i])));
    const double one_minus_cosine = 1 - cosine(got, c.embedding);
    EXPECT_LT(max_diff, bound.max_diff);
    EXPECT_LT(one_minus_cosine, bound.one_minus_cosine);
    check.add({0, max_diff, one_minus_cosine});
  }
  return check;
}

}  // namespace kvforge::testing
