// Greedy-only gathers (model/vocab_argmax.h): rows rebuilt from the slice
// summaries of 1-4 vocabulary slices give greedy sampling the full row's
// token, value and errors, ties (within a slice, across slices, -0 and +0)
// and invalid logits included.
#include "model/vocab_argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/ops/argmax.h"
#include "engine/sampling/sampler.h"

namespace kvforge {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// `row` cut at `cuts` (slice k is [cuts[k], cuts[k + 1])), each slice
// summarised as its rank would, then rebuilt as every rank does.
std::vector<float> rebuilt(const std::vector<float>& row, const std::vector<int64_t>& cuts) {
  const int64_t slices = int64_t(cuts.size()) - 1;
  std::vector<float> summaries(size_t(slices * kSliceMaxFloats));
  for (int64_t k = 0; k < slices; ++k)
    summarize_vocab_slice(row.data() + cuts[size_t(k)], 1, cuts[size_t(k + 1)] - cuts[size_t(k)],
                          cuts[size_t(k)], summaries.data() + k * kSliceMaxFloats);
  std::vector<float> out(row.size());
  rebuild_argmax_rows(summaries.data(), slices, 1, int64_t(row.size()), out.data());
  return out;
}

// What greedy sampling makes of a row: the token and its logit, or the error.
std::string greedy(const std::vector<float>& row) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, int(row.size()));
  EXPECT_TRUE(s.reads_only_argmax());
  try {
    const int token = s.sample(row);
    const float logit = s.last_distribution()[0].logit;
    uint32_t bits;
    std::memcpy(&bits, &logit, sizeof bits);
    return std::to_string(token) + " " + std::to_string(bits);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

std::vector<std::vector<int64_t>> cuts_of(int64_t n) {
  return {{0, n},         {0, n / 2, n}, {0, 1, n}, {0, n - 1, n}, {0, n / 4, n / 2, 3 * n / 4, n},
          {0, 5, 6, 7, n}};
}

void expect_same_greedy(const std::vector<float>& row, const std::string& what) {
  for (const auto& cuts : cuts_of(int64_t(row.size()))) {
    const std::vector<float> r = rebuilt(row, cuts);
    EXPECT_EQ(greedy(r), greedy(row)) << what << ", " << cuts.size() - 1 << " slices";
    const ArgmaxResult full = argmax_checked(row.data(), int64_t(row.size()));
    const ArgmaxResult part = argmax_checked(r.data(), int64_t(r.size()));
    EXPECT_EQ(part.first_invalid, full.first_invalid) << what;
    if (full.first_invalid < 0) {
      EXPECT_EQ(part.index, full.index) << what;
    }
  }
}

TEST(VocabArgmax, RandomRowsGiveTheFullRowsToken) {
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(0, 3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> row(97);
    for (float& x : row) x = logit(rng);
    expect_same_greedy(row, "trial " + std::to_string(trial));
  }
}

TEST(VocabArgmax, TiesGoToTheLowestIdAcrossSlices) {
  std::vector<float> row(64, 1.0f);
  for (int64_t a : {3, 31, 32, 47}) {
    for (int64_t b : {0, 5, 6, 32, 33, 63}) {
      if (a == b) continue;
      std::vector<float> r = row;
      r[size_t(a)] = 9.5f;
      r[size_t(b)] = 9.5f;  // the same maximum twice, in the same or another slice
      expect_same_greedy(r, "tie at " + std::to_string(a) + " and " + std::to_string(b));
      EXPECT_EQ(std::stoi(greedy(rebuilt(r, {0, 32, 64}))), std::min(a, b));
    }
  }
  std::vector<float> zeros(40, -1.0f);
  zeros[30] = 0.0f;
  zeros[10] = -0.0f;  // equal to +0: the lower id wins, with its own bits
  expect_same_greedy(zeros, "-0 and +0");
  expect_same_greedy(std::vector<float>(40, 2.0f), "all equal");
}

TEST(VocabArgmax, MaskedAndInvalidLogitsFailAsTheFullRow) {
  std::vector<float> masked(40, -kInf);
  expect_same_greedy(masked, "all -inf");
  masked[37] = -5.0f;
  expect_same_greedy(masked, "one unmasked");
  std::vector<float> row(40, 0.5f);
  row[33] = std::nanf("");
  row[21] = kInf;  // the first invalid one, in an earlier slice than the NaN
  row[2] = 7.0f;
  expect_same_greedy(row, "NaN and +inf");
  row[21] = 0.5f;
  expect_same_greedy(row, "NaN");
  EXPECT_NE(greedy(rebuilt(row, {0, 20, 40})).find("33"), std::string::npos);
}

}  // namespace
}  // namespace kvforge
