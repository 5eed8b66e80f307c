// Logits against an independent engine: ../shared/testdata/golden holds
// llama.cpp's logits (exact mode: f32 KV, no flash attention) for two random
// F32 models, for an 11-token prompt and 16 greedy steps.
//
// Tolerance 1e-4 max abs: a float64 reference agrees with the golden logits
// to 3.3e-6 (testdata README), so the golden values carry ~3e-6 of f32
// rounding themselves; our own f32 rounding adds a similar amount.
#include "golden_logits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/sequence_runner.h"
#include "testdata.h"

namespace kvforge {
namespace {

class GoldenLogitsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenLogitsTest, MatchesLlamaCppForPromptAndGreedySteps) {
  KVFORGE_REQUIRE_TESTDATA();
  const std::string name = GetParam();
  const testing::GoldenLogits g =
      testing::read_golden_logits(testing::testdata("golden/" + name + ".logits.bin"));
  const auto model = Model::load(testing::testdata("golden/" + name + ".gguf"));
  ASSERT_EQ(model->config().n_vocab, g.n_vocab);
  for (int threads : {1, 2}) {
    const std::vector<float> ours = testing::run_golden_tokens(*model, g, threads);
    const float worst = testing::max_golden_difference(g, ours, name);
    EXPECT_LE(worst, 1e-4f) << name << " with " << threads << " threads";
    std::printf("[ golden ] %s, %d threads: max |logit diff| = %.3g\n", name.c_str(), threads,
                worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenLogitsTest,
                         ::testing::Values("tiny-mha-e64-l2-f32", "tiny-gqa-e64-l2-f32"),
                         [](const auto& param_info) {
                           return testing::golden_test_name(param_info.param);
                         });

}  // namespace
}  // namespace kvforge
