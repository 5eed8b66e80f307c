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
#include <cmath>
#include <fstream>
#include <span>
#include <string>
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

// The largest |difference| between `ours` ([rows][n_vocab], as
// run_golden_tokens gives) and the golden's logits; checks on the way that
// every greedy pick, from the prompt's last row on, is llama.cpp's token.
inline float max_golden_difference(const GoldenLogits& g, std::span<const float> ours,
                                   const std::string& label) {
  float worst = 0;
  for (int row = 0; row < g.rows(); ++row) {
    const auto want = g.row(row);
    const float* got = ours.data() + size_t(row) * size_t(g.n_vocab);
    for (int j = 0; j < g.n_vocab; ++j) worst = std::max(worst, std::abs(want[size_t(j)] - got[j]));
    if (row < g.n_prompt - 1 || row + 1 == g.rows()) continue;
    const int picked = int(std::max_element(got, got + g.n_vocab) - got);
    EXPECT_EQ(picked, g.tokens[size_t(row + 1)]) << label << ": greedy pick after row " << row;
  }
  return worst;
}

// A test name from a golden file's name ('-' is not allowed in one).
inline std::string golden_test_name(std::string file_name) {
  std::replace(file_name.begin(), file_name.end(), '-', '_');
  return file_name;
}

}  // namespace kvforge::testing
