// Logits against an independent engine: ../shared/testdata/golden holds
// llama.cpp's logits (exact mode: f32 KV, no flash attention) for two random
// F32 models, for an 11-token prompt and 16 greedy steps.
//
// Tolerance 1e-4 max abs: a float64 reference agrees with the golden logits
// to 3.3e-6 (testdata README), so the golden values carry ~3e-6 of f32
// rounding themselves; our own f32 rounding adds a similar amount.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "engine/sequence_runner.h"
#include "testdata.h"

namespace kvforge {
namespace {

struct Golden {
  int n_vocab = 0, n_prompt = 0, n_gen = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [n_prompt + n_gen][n_vocab]
};

Golden read_golden(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  int32_t header[4] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  EXPECT_EQ(header[0], 0x4C4F4754) << path;
  Golden g{header[1], header[2], header[3], {}, {}};
  const size_t rows = size_t(g.n_prompt + g.n_gen);
  g.tokens.resize(rows);
  g.logits.resize(rows * size_t(g.n_vocab));
  in.read(reinterpret_cast<char*>(g.tokens.data()), std::streamsize(rows * 4));
  in.read(reinterpret_cast<char*>(g.logits.data()), std::streamsize(g.logits.size() * 4));
  EXPECT_TRUE(in.good()) << "truncated " << path;
  return g;
}

class GoldenLogitsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenLogitsTest, MatchesLlamaCppForPromptAndGreedySteps) {
  KVFORGE_REQUIRE_TESTDATA();
  const std::string name = GetParam();
  const Golden g = read_golden(testing::testdata("golden/" + name + ".logits.bin"));
  const auto model = Model::load(testing::testdata("golden/" + name + ".gguf"));
  ASSERT_EQ(model->config().n_vocab, g.n_vocab);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    SequenceRunner runner(*model, pool, {.n_ctx = 64, .max_batch = 512, .kv_format = {}});
    const std::span<const int32_t> prompt(g.tokens.data(), size_t(g.n_prompt));
    const auto prompt_logits = runner.prefill(prompt, /*all_logits=*/true);
    std::vector<float> ours(prompt_logits.begin(), prompt_logits.end());
    for (int i = 0; i < g.n_gen; ++i) {
      const auto step = runner.decode(g.tokens[size_t(g.n_prompt + i)]);
      ours.insert(ours.end(), step.begin(), step.end());
    }
    float worst = 0;
    const int rows = g.n_prompt + g.n_gen;
    for (int row = 0; row < rows; ++row) {
      const float* want = g.logits.data() + size_t(row) * g.n_vocab;
      const float* got = ours.data() + size_t(row) * g.n_vocab;
      for (int j = 0; j < g.n_vocab; ++j) worst = std::max(worst, std::abs(want[j] - got[j]));
      if (row >= g.n_prompt - 1 && row + 1 < rows) {
        const int picked = int(std::max_element(got, got + g.n_vocab) - got);
        EXPECT_EQ(picked, g.tokens[size_t(row + 1)]) << "greedy pick after row " << row;
      }
    }
    EXPECT_LE(worst, 1e-4f) << name << " with " << threads << " threads";
    std::printf("[ golden ] %s, %d threads: max |logit diff| = %.3g\n", name.c_str(), threads,
                worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenLogitsTest,
                         ::testing::Values("tiny-mha-e64-l2-f32", "tiny-gqa-e64-l2-f32"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace kvforge
