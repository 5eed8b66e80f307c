// RequestTable: the request bookkeeping the paged Engine and the static
// batch engine share. Rejections name the problem; a request keeps its seed
// or gets one; branch b samples with seed + b after the prompt; one sample
// keeps a token, stops at an end-of-generation token (unless ignore_eos) or
// finishes "length" at either limit; a request is forgotten with its last
// branch.
#include "engine/request_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvforge {
namespace {

constexpr int32_t kVocab = 16;
constexpr int32_t kEos = 2;

std::vector<float> peak_at(int32_t token) {
  std::vector<float> logits(kVocab, 0.0f);
  logits[size_t(token)] = 10.0f;
  return logits;
}

SamplingParams greedy(std::optional<int32_t> max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

std::string rejection(const RequestTable& t, std::vector<int32_t> prompt, SamplingParams p, int n,
                      LogprobOptions lp = {}) {
  try {
    t.check(prompt, p, n, lp, 4, "[1, 4]");
  } catch (const RequestRejected& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RequestTableTest, RejectionsNameTheProblem) {
  const RequestTable t(kVocab, {kEos});
  SamplingParams bad = greedy(4);
  bad.top_p = 3;
  EXPECT_NE(rejection(t, {1, 3}, bad, 1).find("top_p"), std::string::npos);
  EXPECT_EQ(rejection(t, {1, 3}, greedy(4), 5), "request: n must be in [1, 4], got 5");
  EXPECT_NE(rejection(t, {1, 3}, greedy(4), 1, {.enabled = false, .top = 2}).find("top logprobs"),
            std::string::npos);
  EXPECT_EQ(rejection(t, {}, greedy(4), 1), "request: empty prompt");
  EXPECT_EQ(rejection(t, {1, 16}, greedy(4), 1),
            "request: prompt token 1 has id 16, outside the vocabulary [0, 16)");
  EXPECT_EQ(rejection(t, {1, 15}, greedy(4), 4, {.enabled = true, .top = 16}), "accepted");

  auto length = [](int64_t prompt_len, std::optional<int32_t> max_tokens) {
    try {
      RequestTable::check_length(prompt_len, greedy(max_tokens), 10, "the context of 10 tokens");
    } catch (const RequestRejected& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(length(10, std::nullopt),
            "request: prompt of 10 tokens leaves no room to generate in the context of 10 tokens");
  EXPECT_EQ(length(6, 5),
            "request: prompt of 6 tokens + max_tokens 5 = 11 tokens exceeds the context of 10 "
            "tokens");
  EXPECT_EQ(length(6, 4), "accepted");
  EXPECT_EQ(length(9, std::nullopt), "accepted");
}

TEST(RequestTableTest, ARequestKeepsItsSeedOrGetsOne) {
  RequestTable t(kVocab, {kEos});
  SamplingParams seeded = greedy(4);
  seeded.seed = 42;
  const RequestId a = t.add(std::vector<int32_t>{1, 3}, seeded, 2, {});
  const RequestId b = t.add(std::vector<int32_t>{1, 4, 5}, greedy(std::nullopt), 1, {});
  EXPECT_NE(a, b);
  EXPECT_EQ(t.at(a).params.seed, 42u);
  EXPECT_TRUE(t.at(b).params.seed.has_value());
  EXPECT_EQ(t.at(a).open, 2);
  EXPECT_EQ(t.at(b).prompt, (std::vector<int32_t>{1, 4, 5}));
  const BranchLimits unset = t.limits(b, 10);
  EXPECT_EQ(unset.max_tokens, 7) << "what the prompt leaves";
  EXPECT_EQ(unset.max_len, 10);
  EXPECT_EQ(t.limits(a, 10).max_tokens, 4);
}

TEST(RequestTableTest, BranchBSamplesWithSeedPlusBAfterThePrompt) {
  RequestTable t(kVocab, {});
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 7;
  p.repetition_penalty = 1.5f;
  const std::vector<int32_t> prompt{1, 5, 6};
  const RequestId id = t.add(prompt, p, 3, {});
  std::vector<float> logits(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) logits[size_t(i)] = float(i % 5) * 0.5f;
  for (int b = 0; b < 3; ++b) {
    SamplingParams alone = p;
    alone.seed = 7 + uint64_t(b);
    Sampler want(alone, kVocab);
    want.accept_prompt(std::vector<int>{1, 5, 6});
    const std::unique_ptr<Sampler> got = t.make_sampler(id, b);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(got->sample(logits), want.sample(logits)) << b;
  }
}

TEST(RequestTableTest, ASampleKeepsATokenStopsAtEndOfGenerationOrFinishesAtALimit) {
  RequestTable t(kVocab, {kEos});
  const RequestId id = t.add(std::vector<int32_t>{1, 3}, greedy(3), 1, {.enabled = true, .top = 2});
  const std::unique_ptr<Sampler> s = t.make_sampler(id, 0);
  StepEvent ev = t.sample(id, 0, *s, peak_at(7), 0, 2, {3, 10});
  ASSERT_TRUE(ev.token.has_value());
  EXPECT_EQ(ev.token->id, 7);
  EXPECT_EQ(ev.token->top_logprobs.size(), 2u);
  EXPECT_LT(ev.token->logprob, 0.0f);
  EXPECT_FALSE(ev.finish.has_value());
  ev = t.sample(id, 0, *s, peak_at(8), 2, 4, {3, 10});
  EXPECT_EQ(ev.token->id, 8);
  EXPECT_EQ(ev.finish, FinishReason::Length) << "the third token reaches max_tokens 3";
  ev = t.sample(id, 0, *s, peak_at(8), 0, 9, {3, 10});
  EXPECT_EQ(ev.finish, FinishReason::Length) << "the sequence reaches max_len 10";
  ev = t.sample(id, 0, *s, peak_at(kEos), 0, 2, {3, 10});
  EXPECT_FALSE(ev.token.has_value()) << "the end-of-generation token is not emitted";
  EXPECT_EQ(ev.finish, FinishReason::Stop);
  EXPECT_EQ(t.tokens_generated(), 4);

  SamplingParams ignoring = greedy(3);
  ignoring.ignore_eos = true;
  const RequestId other = t.add(std::vector<int32_t>{1}, ignoring, 1, {});
  const std::unique_ptr<Sampler> s2 = t.make_sampler(other, 0);
  ev = t.sample(other, 0, *s2, peak_at(kEos), 0, 1, {3, 10});
  ASSERT_TRUE(ev.token.has_value());
  EXPECT_EQ(ev.token->id, kEos);
  EXPECT_FALSE(ev.finish.has_value());
}

TEST(RequestTableTest, ARequestIsForgottenWithItsLastBranch) {
  RequestTable t(kVocab, {});
  const RequestId id = t.add(std::vector<int32_t>{1}, greedy(2), 3, {});
  t.end_branches(id, 2);
  EXPECT_TRUE(t.contains(id));
  EXPECT_EQ(t.at(id).open, 1);
  t.end_branches(id, 1);
  EXPECT_FALSE(t.contains(id));
  t.end_branches(id, 1);  // already gone: nothing to do
  const RequestId aborted = t.add(std::vector<int32_t>{1}, greedy(2), 2, {});
  t.erase(aborted);
  EXPECT_FALSE(t.contains(aborted));
}

}  // namespace
}  // namespace kvforge
