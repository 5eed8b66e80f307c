// Reading llama.cpp's logits dumps (dump_logits, ../shared/peer) and running
// kvforge over the same tokens, for the golden tests.
//
// X.logits.bin layout (little endian):
//   int32 magic 0x4C4F4754 ('LOGT'), int32 n_vocab, int32 n_prompt, int32 n_gen
//   int32 tokens[n_prompt + n_gen]     prompt token ids (BOS first), then the greedy picks
//   float32 logits[n_prompt + n_gen][n_vocab]
//                                      row i = logits after feeding tokens[0..i]
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include "engine/sequence_runner.h"

namespace kvforge::testing {

struct GoldenLogits {
  int n_vocab = 0, n_prompt = 0, n_gen = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [n_prompt + n_gen][n_vocab]

  int rows() const { return n_prompt + n_gen; }
  std::span<const float> row(int i) const {
    return {logits.data() + size_t(i) * size_t(n_vocab), size_t(n_vocab)};
  }
};

inline GoldenLogits read_golden_logits(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  int32_t header[4] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  EXPECT_EQ(header[0], 0x4C4F4754) << path;
  GoldenLogits g{header[1], header[2], header[3], {}, {}};
  const size_t rows = size_t(g.rows());
  g.tokens.resize(rows);
  g.logits.resize(rows * size_t(g.n_vocab));
  in.read(reinterpret_cast<char*>(g.tokens.data()), std::streamsize(rows * 4));
  in.read(reinterpret_cast<char*>(g.logits.data()), std::streamsize(g.logits.size() * 4));
  EXPECT_TRUE(in.good()) << "truncated " << path;
  return g;
}

// kvforge's logits for the golden's prompt (prefill passes of up to
// `max_batch` tokens, all rows) and then for each of its greedy tokens fed one
// at a time: [rows][n_vocab], as in the golden.
inline std::vector<float> run_golden_tokens(const Model& model, const GoldenLogits& g, int threads,
                                            int max_batch = 512) {
  ThreadPool pool(threads);
  SequenceRunner runner(model, pool,
                        {.n_ctx = std::max(64, g.rows()), .max_batch = max_batch, .kv_format = {}});
  const std::span<const int32_t> prompt(g.tokens.data(), size_t(g.n_prompt));
  const auto prompt_logits = runner.prefill(prompt, /*all_logits=*/true);
  std::vector<float> ours(prompt_logits.begin(), prompt_logits.end());
  for (int i = 0; i < g.n_gen; ++i) {
    const auto step = runner.decode(g.tokens[size_t(g.n_prompt + i)]);
    ours.insert(ours.end(), step.begin(), step.end());
  }
  return ours;
}

}  // namespace kvforge::testing
