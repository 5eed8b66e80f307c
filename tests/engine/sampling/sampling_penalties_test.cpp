#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "engine/sampling/sampler.h"

namespace kvforge {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

SamplingParams penalties(float repetition, float presence, float frequency, int last_n = -1) {
  SamplingParams p;
  p.seed = 1;
  p.repetition_penalty = repetition;
  p.presence_penalty = presence;
  p.frequency_penalty = frequency;
  p.penalty_last_n = last_n;
  return p;
}

// Logits after penalties: with no truncation, last_distribution() is every
// token in id order with its penalised logit.
std::vector<float> penalised(Sampler& s, const std::vector<float>& logits) {
  s.sample(logits);
  std::vector<float> out(logits.size(), 0);
  EXPECT_EQ(s.last_distribution().size(), logits.size());
  for (const Candidate& c : s.last_distribution()) out[c.token] = c.logit;
  return out;
}

const std::vector<float> kLogits = {2, -1, 0.5f, 3};

TEST(SamplerPenaltiesTest, RepetitionDividesPositiveAndMultipliesNegativeOncePerToken) {
  Sampler s(penalties(2, 0, 0), 4);
  const int prompt[] = {0, 1, 0, 0};
  s.accept_prompt(prompt);
  EXPECT_EQ(penalised(s, kLogits), (std::vector<float>{1, -2, 0.5f, 3}));
}

TEST(SamplerPenaltiesTest, PresenceAndFrequencyCountGeneratedTokensOnly) {
  Sampler s(penalties(1, 0.25f, 0.5f), 4);
  const int prompt[] = {3, 3};
  s.accept_prompt(prompt);
  for (int t : {2, 2, 1}) s.accept(t);
  // 2: 0.5 - 2 * 0.5 - 0.25;  1: -1 - 0.5 - 0.25;  3 (prompt only) untouched.
  EXPECT_EQ(penalised(s, kLogits), (std::vector<float>{2, -1.75f, -0.75f, 3}));
}

TEST(SamplerPenaltiesTest, RepetitionSeesTheModelLogitBeforeFrequency) {
  Sampler s(penalties(2, 0, 1), 4);
  s.accept(2);
  // 0.5 / 2 - 1 = -0.75; frequency first would give (0.5 - 1) * 2 = -1.
  EXPECT_EQ(penalised(s, kLogits)[2], -0.75f);
}

TEST(SamplerPenaltiesTest, WindowCoversOnlyTheLastNTokens) {
  Sampler s(penalties(1, 0, 1, /*last_n=*/2), 4);
  for (int t : {0, 1, 2}) s.accept(t);
  EXPECT_EQ(penalised(s, kLogits), (std::vector<float>{2, -2, -0.5f, 3}));
  s.accept(3);  // the ring wraps: window is now {2, 3}
  EXPECT_EQ(penalised(s, kLogits), (std::vector<float>{2, -1, -0.5f, 2}));
  s.accept(3);  // {3, 3}
  EXPECT_EQ(penalised(s, kLogits), (std::vector<float>{2, -1, 0.5f, 1}));
}

TEST(SamplerPenaltiesTest, WholeContextAndDisabledWindow) {
  Sampler whole(penalties(1, 0, 0.01f, -1), 4);
  Sampler off(penalties(1, 0, 0.01f, 0), 4);
  for (int i = 0; i < 100; ++i) {
    whole.accept(i == 0 ? 0 : 3);
    off.accept(i == 0 ? 0 : 3);
  }
  const auto w = penalised(whole, kLogits);
  EXPECT_FLOAT_EQ(w[0], 1.99f);  // the first token is still in the window
  EXPECT_NEAR(w[3], 3 - 99 * 0.01, 1e-4);
  EXPECT_EQ(penalised(off, kLogits), kLogits);
}

TEST(SamplerPenaltiesTest, GreedySeesPenalties) {
  SamplingParams p = penalties(1.5f, 0, 0);
  p.temperature = 0;
  Sampler s(p, 2);
  const std::vector<float> logits = {3, 2.9f};
  EXPECT_EQ(s.sample(logits), 0);
  s.accept(0);
  EXPECT_EQ(s.sample(logits), 1);  // 3 / 1.5 = 2 < 2.9
}

TEST(SamplerPenaltiesTest, MaskedStaysMaskedAndHugeLogitsStayFinite) {
  constexpr float kMax = std::numeric_limits<float>::max();
  Sampler s(penalties(0.01f, -2, -2), 3);
  for (int t : {0, 1, 1}) s.accept(t);
  const auto l = penalised(s, {kNegInf, 1e38f, -1e38f});
  EXPECT_EQ(l[0], kNegInf);
  EXPECT_EQ(l[1], kMax);  // 1e38 / 0.01 would overflow to +inf
  EXPECT_EQ(l[2], -1e38f);
  EXPECT_EQ(s.sample(std::vector<float>{kNegInf, 1e38f, -1e38f}), 1);
}

TEST(SamplerPenaltiesTest, ResetForgetsHistory) {
  Sampler s(penalties(2, 1, 1), 4);
  s.accept(0);
  s.reset();
  EXPECT_EQ(penalised(s, kLogits), kLogits);
}

}  // namespace
}  // namespace kvforge
