#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "engine/sampling/sampler.h"

namespace kvforge {
namespace sampling_sampler_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

SamplingParams with_seed(uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(p > 0 ? static_cast<float>(std::log(p)) : kNegInf);
  return out;
}

// Deterministic logits in [-scale, scale] from raw mt19937_64 bits.
std::vector<float> random_logits(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::vector<float> out(n);
  for (float& l : out) l = scale * (static_cast<float>(rng() >> 40) / float(1 << 24) * 2 - 1);
  return out;
}

std::vector<int> draw_many(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(logits));
  return out;
}

std::vector<double> frequencies(const std::vector<int>& tokens, size_t vocab) {
  std::vector<double> f(vocab, 0);
  for (int t : tokens) f[t] += 1.0 / tokens.size();
  return f;
}

// (token → prob) of the last distribution; order-independent view.
std::map<int, float> distribution(const Sampler& s) {
  std::map<int, float> out;
  for (const Candidate& c : s.last_distribution()) out[c.token] = c.prob;
  return out;
}

void expect_distribution(const Sampler& s, const std::map<int, double>& expected) {
  const auto got = distribution(s);
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [token, p] : expected) {
    ASSERT_TRUE(got.count(token)) << "token " << token << " missing";
    EXPECT_NEAR(got.at(token), p, 1e-5) << "token " << token;
  }
}

TEST(SamplerTest, GreedyIsArgmaxWithTiesToLowestId) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, 5);
  EXPECT_EQ(s.sample(std::vector<float>{1, 5, 3, 5, kNegInf}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{kNegInf, -2, -2, -3, -2}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{0, 0, 0, 0, 0}), 0);
  EXPECT_EQ(s.sample(std::vector<float>{0, 0, 0, 0, 0.001f}), 4);
  // The kept distribution is the chosen token alone, as from the general path.
  EXPECT_EQ(s.sample(std::vector<float>{-1, 2.5f, 0, kNegInf, 2}), 1);
  ASSERT_EQ(s.last_distribution().size(), 1u);
  EXPECT_EQ(s.last_distribution()[0].token, 1);
  EXPECT_EQ(s.last_distribution()[0].logit, 2.5f);
  EXPECT_EQ(s.last_distribution()[0].prob, 1.0f);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Sampler big(p, 1000);
    auto logits = random_logits(1000, seed, 4);
    logits[seed * 7] = logits[seed * 13 + 1] = 10;  // a tie at the top
    EXPECT_EQ(big.sample(logits), std::min(seed * 7, seed * 13 + 1));
  }
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDifferent) {
  const auto logits = random_logits(16, 1, 1);
  Sampler a(with_seed(42), 16), b(with_seed(42), 16), c(with_seed(43), 16);
  const auto seq_a = draw_many(a, logits, 200);
  EXPECT_EQ(seq_a, draw_many(b, logits, 200));
  EXPECT_NE(seq_a, draw_many(c, logits, 200));
  EXPECT_GT(std::set<int>(seq_a.begin(), seq_a.end()).size(), 8u);  // not trivially constant
}

// Pins the documented draw, the basis of cross-platform reproducibility:
// u = (raw mt19937_64 output >> 11) * 2^-53, inverse CDF in id order.
TEST(SamplerTest, DrawUsesRawMt19937_64Bits) {
  Sampler s(with_seed(7), 3);
  std::mt19937_64 reference(7);
  for (int i = 0; i < 2000; ++i) {
    const double u = static_cast<double>(reference() >> 11) * 0x1.0p-53;
    const int expected = u < 0.25 ? 0 : (u < 0.5 ? 1 : 2);  // weights 1, 1, 2
    ASSERT_EQ(s.sample(logits_of({0.25, 0.25, 0.5})), expected) << "draw " << i;
  }
}

TEST(SamplerTest, UnsetSeedIsRecordedAndReplays) {
  const auto logits = random_logits(32, 2, 1);
  Sampler a(SamplingParams{}, 32), other(SamplingParams{}, 32);
  EXPECT_NE(a.seed(), other.seed());
  Sampler replay(with_seed(a.seed()), 32);
  EXPECT_EQ(draw_many(a, logits, 100), draw_many(replay, logits, 100));
}

TEST(SamplerTest, ResetReplaysTheSameTokens) {
  const auto logits = random_logits(32, 3, 1);
  Sampler s(with_seed(5), 32);
  const auto first = draw_many(s, logits, 100);
  s.reset();
  EXPECT_EQ(first, draw_many(s, logits, 100));
}

TEST(SamplerTest, FrequenciesMatchProbabilitiesAtTemperatureOne) {
  const std::vector<double> probs = {0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02};
  Sampler s(with_seed(1234), 8);
  const int n = 50000;
  std::vector<int> counts(8, 0);
  for (int t : draw_many(s, logits_of(probs), n)) ++counts[t];
  double chi2 = 0;
  for (size_t i = 0; i < probs.size(); ++i)
    chi2 += std::pow(counts[i] - n * probs[i], 2) / (n * probs[i]);
  // 7 degrees of freedom: P(chi2 > 24.3) = 0.001. A token off by one or a
  // biased uniform lands in the thousands.
  EXPECT_LT(chi2, 24.3);
  std::map<int, double> expected;
  for (size_t i = 0; i < probs.size(); ++i) expected[i] = probs[i];
  expect_distribution(s, expected);
}

TEST(SamplerTest, MaskedTokensAreNeverDrawn) {
  Sampler s(with_seed(9), 6);
  const std::vector<float> logits = {kNegInf, 0, kNegInf, 0, 0, kNegInf};
  for (int t : draw_many(s, logits, 3000)) EXPECT_TRUE(t == 1 || t == 3 || t == 4) << t;
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
  SamplingParams greedy_params, top1_params = with_seed(3);
  greedy_params.temperature = 0;
  top1_params.top_k = 1;
  top1_params.temperature = 1.5f;
  Sampler greedy(greedy_params, 500), top1(top1_params, 500);
  for (uint64_t i = 0; i < 100; ++i) {
    auto logits = random_logits(500, i, 3);
    if (i % 2) logits[400] = logits[(i * 31) % 500] = 5;  // tie at the top half of the time
    EXPECT_EQ(top1.sample(logits), greedy.sample(logits)) << "case " << i;
  }
}

TEST(SamplerTest, TopKKeepsTheKHighestRenormalised) {
  const auto logits = logits_of({0.1, 0.3, 0.05, 0.2, 0.15, 0.2});
  SamplingParams p = with_seed(1);
  p.top_k = 2;
  Sampler s(p, 6);
  s.sample(logits);
  // 3 and 5 tie for second place; the lower id stays.
  expect_distribution(s, {{1, 0.3 / 0.5}, {3, 0.2 / 0.5}});
  p.top_k = 4;
  Sampler s4(p, 6);
  s4.sample(logits);
  expect_distribution(s4, {{1, 0.3 / 0.85}, {3, 0.2 / 0.85}, {5, 0.2 / 0.85}, {4, 0.15 / 0.85}});
  p.top_k = 100;  // more than the vocabulary: nothing is cut
  Sampler all(p, 6);
  all.sample(logits);
  EXPECT_EQ(all.last_distribution().size(), 6u);
}

TEST(SamplerTest, TopPKeepsSmallestSetReachingP) {
  const auto logits = logits_of({0.1, 0.5, 0.05, 0.3, 0.05});
  const auto run = [&](float top_p) {
    SamplingParams p = with_seed(11);
    p.top_p = top_p;
    auto s = std::make_unique<Sampler>(p, 5);
    s->sample(logits);
    return s;
  };
  expect_distribution(*run(0.45f), {{1, 1.0}});
  expect_distribution(*run(0.75f), {{1, 0.5 / 0.8}, {3, 0.3 / 0.8}});
  expect_distribution(*run(0.85f), {{1, 0.5 / 0.9}, {3, 0.3 / 0.9}, {0, 0.1 / 0.9}});

  // Cumulative exactly p: that set is enough ("≥ p", not "> p").
  SamplingParams p = with_seed(11);
  p.top_p = 0.5f;
  Sampler equal(p, 4);
  equal.sample(std::vector<float>{0, 0, 0, 0});
  expect_distribution(equal, {{0, 0.5}, {1, 0.5}});

  // The draws follow the cut distribution.
  auto s = run(0.75f);
  const auto f = frequencies(draw_many(*s, logits, 20000), 5);
  EXPECT_EQ(f[0] + f[2] + f[4], 0.0);
  EXPECT_NEAR(f[1], 0.625, 0.02);
}

TEST(SamplerTest, MinPDropsTokensBelowFractionOfTheBest) {
  // Token 4 is masked so that top_k = 4 takes the ranked path and top_k = 0 the unranked one.
  const auto logits = logits_of({0.5, 0.3, 0.15, 0.05, 0});
  for (int top_k : {0, 4}) {
    SamplingParams p = with_seed(2);
    p.top_k = top_k;
    p.min_p = 0.25f;  // threshold 0.125
    Sampler keep3(p, 5);
    keep3.sample(logits);
    expect_distribution(keep3, {{0, 0.5 / 0.95}, {1, 0.3 / 0.95}, {2, 0.15 / 0.95}});
    p.min_p = 0.35f;  // threshold 0.175
    Sampler keep2(p, 5);
    keep2.sample(logits);
    expect_distribution(keep2, {{0, 0.5 / 0.8}, {1, 0.3 / 0.8}});
  }
}

TEST(SamplerTest, TemperatureScalesLogits) {
  const std::vector<float> logits = {0, std::log(2.0f)};  // p1 = 2/3 at T = 1
  const double sqrt2 = std::sqrt(2.0);
  const std::pair<float, double> cases[] = {
      {1.0f, 2.0 / 3}, {2.0f, sqrt2 / (1 + sqrt2)}, {0.5f, 0.8}};
  for (const auto& [temperature, p1] : cases) {
    SamplingParams p = with_seed(17);
    p.temperature = temperature;
    Sampler s(p, 2);
    const auto f = frequencies(draw_many(s, logits, 20000), 2);
    expect_distribution(s, {{0, 1 - p1}, {1, p1}});
    EXPECT_NEAR(f[1], p1, 0.015) << "T = " << temperature;
  }
}

TEST(SamplerTest, TemperatureIsAppliedBeforeTopP) {
  const auto logits = logits_of({0.7, 0.3});
  SamplingParams p = with_seed(4);
  p.top_p = 0.6f;
  Sampler cold(p, 2);
  cold.sample(logits);
  EXPECT_EQ(cold.last_distribution().size(), 1u);
  p.temperature = 10;  // ≈ {0.52, 0.48}: 0.52 < 0.6, so both stay
  Sampler hot(p, 2);
  hot.sample(logits);
  EXPECT_EQ(hot.last_distribution().size(), 2u);
}

// Straightforward reference: full sort, softmax, cuts; the same float/double
// arithmetic as documented (weights exp((l - max) / T), total in id order).
std::map<int, double> reference_distribution(const std::vector<float>& logits,
                                             const SamplingParams& p) {
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < order.size()) order.resize(p.top_k);
  const float max = logits[order[0]];
  std::vector<float> w(logits.size(), 0);
  for (int t : order) w[t] = std::exp((logits[t] - max) / p.temperature);
  double total = 0;
  std::vector<int> by_id = order;
  std::sort(by_id.begin(), by_id.end());
  for (int t : by_id) total += w[t];
  if (p.top_p < 1) {
    double cum = 0;
    size_t keep = order.size();
    for (size_t i = 0; i < order.size(); ++i)
      if ((cum += w[order[i]]) >= p.top_p * total) {
        keep = i + 1;
        break;
      }
    order.resize(keep);
  }
  std::erase_if(order, [&](int t) { return w[t] < p.min_p; });
  double kept = 0;
  for (int t : order) kept += w[t];
  std::map<int, double> out;
  for (int t : order) out[t] = w[t] / kept;
  return out;
}

TEST(SamplerTest, ChainMatchesFullSortReferenceOnLargeVocab) {
  struct Case {
    int top_k;
    float temperature, top_p, min_p;
  };
  // Wide nuclei force top-p through several ranking chunks (128, 512, 2048, ...).
  const Case cases[] = {{0, 1.0f, 0.9f, 0},      {0, 2.0f, 0.99f, 0},   {0, 0.3f, 0.5f, 0},
                        {0, 1.0f, 0.95f, 0.05f}, {0, 1.0f, 1.0f, 0.2f}, {40, 0.8f, 0.9f, 0.1f},
                        {3000, 1.0f, 0.97f, 0},  {1, 1.0f, 0.9f, 0}};
  for (const Case& c : cases) {
    SamplingParams p = with_seed(21);
    p.top_k = c.top_k;
    p.temperature = c.temperature;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    const auto logits = random_logits(20000, 99, 4);
    Sampler s(p, 20000);
    const int token = s.sample(logits);
    const auto expected = reference_distribution(logits, p);
    const auto got = distribution(s);
    ASSERT_EQ(got.size(), expected.size()) << "top_k " << c.top_k << " top_p " << c.top_p;
    for (const auto& [t, prob] : expected) {
      ASSERT_TRUE(got.count(t)) << "token " << t;
      EXPECT_NEAR(got.at(t), prob, 1e-6);
    }
    EXPECT_TRUE(expected.count(token));
  }
}

TEST(SamplerTest, LogprobsAreRawLogSoftmax) {
  const std::vector<float> logits = {1, 3, 3, kNegInf, 0};
  double z = 0;
  for (float l : logits) z += std::exp(double{l});
  const auto logprob = [&](int t) { return static_cast<float>(logits[t] - std::log(z)); };

  SamplingParams p = with_seed(8);
  p.repetition_penalty = 3;  // penalties and temperature do not change reported logprobs
  p.temperature = 0.5f;
  Sampler s(p, 5);
  s.accept(1);
  std::vector<TokenLogprob> top(3);
  const SampleResult r = s.sample_with_logprobs(logits, top);
  EXPECT_NEAR(r.logprob, logprob(r.token), 1e-6);
  const int expected_top[] = {1, 2, 0};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(top[i].token, expected_top[i]);
    EXPECT_NEAR(top[i].logprob, logprob(expected_top[i]), 1e-6);
  }

  std::vector<TokenLogprob> all(8, TokenLogprob{-7, 0});  // more slots than tokens
  s.sample_with_logprobs(logits, all);
  const int expected_all[] = {1, 2, 0, 4, 3};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(all[i].token, expected_all[i]);
  EXPECT_EQ(all[4].logprob, kNegInf);
  EXPECT_EQ(all[5].token, -7);  // untouched
}

TEST(SamplerTest, TopLogprobsMatchFullSortOnLargeVocab) {
  const auto logits = random_logits(5000, 5, 6);
  std::vector<int> order(5000);
  for (int i = 0; i < 5000; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  Sampler s(with_seed(1), 5000);
  std::vector<TokenLogprob> top(20);
  s.sample_with_logprobs(logits, top);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(top[i].token, order[i]) << "rank " << i;
}

TEST(SamplerTest, BadLogitsAreErrorsNamingTheProblem) {
  SamplingParams greedy;
  greedy.temperature = 0;  // the single-pass argmax path
  Sampler s(with_seed(1), 4);
  for (const SamplingParams& params : {with_seed(1), greedy}) {
    Sampler bad(params, 4);
    const auto message = [&](const std::vector<float>& logits) {
      try {
        bad.sample(logits);
      } catch (const std::invalid_argument& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    SCOPED_TRACE("temperature " + std::to_string(params.temperature));
    EXPECT_EQ(message({0, 0, 0}), "sampler: got 3 logits, expected vocab_size 4");
    EXPECT_EQ(message({0, 0, NAN, 0}),
              "sampler: logit of token 2 is NaN; logits must be finite or -inf");
    EXPECT_EQ(message({NAN, 0, 0, 0}),
              "sampler: logit of token 0 is NaN; logits must be finite or -inf");
    EXPECT_EQ(message({0, INFINITY, 0, 0}),
              "sampler: logit of token 1 is +inf; logits must be finite or -inf");
    EXPECT_EQ(message({kNegInf, kNegInf, kNegInf, kNegInf}),
              "sampler: all 4 logits are -inf; nothing can be sampled");
  }
  EXPECT_THROW(s.accept(4), std::invalid_argument);
  EXPECT_THROW(s.accept(-1), std::invalid_argument);
  const int prompt[] = {0, 9};
  EXPECT_THROW(s.accept_prompt(prompt), std::invalid_argument);
}

}  // namespace sampling_sampler_test
}  // namespace kvforge
