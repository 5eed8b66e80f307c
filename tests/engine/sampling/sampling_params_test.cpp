#include "kvforge/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "engine/sampling/sampler.h"

namespace kvforge {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct BadCase {
  std::function<void(SamplingParams&)> set;
  std::string expected;  // substring of the message
};

TEST(SamplingParamsTest, DefaultsAreValid) { EXPECT_EQ(SamplingParams{}.validate(), std::nullopt); }

TEST(SamplingParamsTest, BoundaryValuesAreValid) {
  const std::function<void(SamplingParams&)> edits[] = {
      [](SamplingParams& p) { p.temperature = 0; },
      [](SamplingParams& p) { p.temperature = 100; },
      [](SamplingParams& p) { p.top_p = 1e-6f; },
      [](SamplingParams& p) { p.min_p = 1; },
      [](SamplingParams& p) { p.repetition_penalty = 10; },
      [](SamplingParams& p) { p.presence_penalty = -2; },
      [](SamplingParams& p) { p.frequency_penalty = 2; },
      [](SamplingParams& p) { p.penalty_last_n = -1; },
      [](SamplingParams& p) { p.max_tokens = 1; },
      [](SamplingParams& p) { p.stop = std::vector<std::string>(kMaxStopStrings, "x"); },
  };
  for (size_t i = 0; i < std::size(edits); ++i) {
    SamplingParams p;
    edits[i](p);
    EXPECT_EQ(p.validate(), std::nullopt) << "edit " << i;
  }
}

TEST(SamplingParamsTest, AbsurdValuesNameTheFieldAndTheValue) {
  const BadCase cases[] = {
      {[](SamplingParams& p) { p.temperature = -0.5f; },
       "temperature must be in [0, 100] (0 = greedy), got -0.5"},
      {[](SamplingParams& p) { p.temperature = kNaN; }, "temperature"},
      {[](SamplingParams& p) { p.temperature = 1000; }, "temperature"},
      {[](SamplingParams& p) { p.top_k = -1; }, "top_k must be >= 0 (0 = off), got -1"},
      {[](SamplingParams& p) { p.top_p = 0; }, "top_p must be in (0, 1] (1 = off), got 0"},
      {[](SamplingParams& p) { p.top_p = 1.5f; }, "top_p must be in (0, 1] (1 = off), got 1.5"},
      {[](SamplingParams& p) { p.top_p = kNaN; }, "top_p"},
      {[](SamplingParams& p) { p.min_p = -0.1f; }, "min_p must be in [0, 1]"},
      {[](SamplingParams& p) { p.min_p = 1.01f; }, "min_p"},
      {[](SamplingParams& p) { p.min_p = kNaN; }, "min_p"},
      {[](SamplingParams& p) { p.repetition_penalty = 0; },
       "repetition_penalty must be in (0, 10]"},
      {[](SamplingParams& p) { p.repetition_penalty = 11; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.repetition_penalty = kNaN; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.presence_penalty = 2.5f; },
       "presence_penalty must be in [-2, 2], got 2.5"},
      {[](SamplingParams& p) { p.presence_penalty = kNaN; }, "presence_penalty"},
      {[](SamplingParams& p) { p.frequency_penalty = -3; },
       "frequency_penalty must be in [-2, 2], got -3"},
      {[](SamplingParams& p) { p.frequency_penalty = INFINITY; }, "frequency_penalty"},
      {[](SamplingParams& p) { p.penalty_last_n = -2; }, "penalty_last_n must be >= -1"},
      {[](SamplingParams& p) { p.max_tokens = 0; }, "max_tokens must be >= 1 when set, got 0"},
      {[](SamplingParams& p) {
         p.stop = {"ok", ""};
       },
       "stop string 1 is empty"},
      {[](SamplingParams& p) { p.stop = {std::string(kMaxStopStringBytes + 1, 'x')}; },
       "stop string 0 is 257 bytes"},
      {[](SamplingParams& p) { p.stop = std::vector<std::string>(kMaxStopStrings + 1, "x"); },
       "at most 32 stop strings, got 33"},
  };
  for (const BadCase& c : cases) {
    SamplingParams p;
    c.set(p);
    const auto err = p.validate();
    ASSERT_TRUE(err.has_value()) << "accepted; expected: " << c.expected;
    EXPECT_NE(err->find(c.expected), std::string::npos) << *err;
    EXPECT_EQ(err->rfind("sampling: ", 0), 0u) << *err;
  }
}

TEST(SamplingParamsTest, SamplerRefusesInvalidParamsWithTheSameMessage) {
  SamplingParams p;
  p.top_p = 2;
  try {
    Sampler sampler(p, 10);
    FAIL() << "constructed a sampler with top_p = 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), *p.validate());
  }
  EXPECT_THROW(Sampler(SamplingParams{}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
