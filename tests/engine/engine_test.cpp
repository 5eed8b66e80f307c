// Engine behaviour beyond "same tokens": admission errors, parallel sampling
// (forks share prompt blocks, copy-on-write keeps branches apart), abort,
// finish reasons, statistics, and no leaked block after any mix of finished,
// aborted and preempted requests (randomized stress with small pools).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine_test_util.h"

namespace kvforge {
namespace {

using testing::EngineRecorder;

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = testing::make_engine_test_model().release(); }
  static void TearDownTestSuite() { delete model_; }
  static Model* model_;
};
Model* EngineTest::model_ = nullptr;

std::string rejection(Engine& e, std::span<const int32_t> prompt, const SamplingParams& p,
                      int n = 1) {
  try {
    e.add_request(prompt, p, n);
  } catch (const RequestRejected& err) {
    return err.what();
  }
  return "";
}

TEST_F(EngineTest, RejectsRequestsThatCanNeverBeServedWithTheReason) {
  ThreadPool pool(1);
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 8;  // 128 tokens, below the model's 256-token context
  Engine e(*model_, pool, o);
  EXPECT_EQ(e.max_sequence_tokens(), 128);
  const auto p100 = testing::make_prompt(100, 1);
  std::string msg = rejection(e, p100, testing::greedy(40));
  EXPECT_NE(msg.find("100 tokens + max_tokens 40 = 140 tokens exceeds the KV pool of 8 blocks"),
            std::string::npos)
      << msg;
  msg = rejection(e, testing::make_prompt(128, 1), SamplingParams{});
  EXPECT_NE(msg.find("prompt of 128 tokens leaves no room"), std::string::npos) << msg;
  EXPECT_EQ(rejection(e, {}, SamplingParams{}), "request: empty prompt");
  const std::vector<int32_t> bad = {5, 300};
  msg = rejection(e, bad, SamplingParams{});
  EXPECT_NE(msg.find("prompt token 1 has id 300, outside the vocabulary [0, 259)"),
            std::string::npos)
      << msg;
  SamplingParams hot;
  hot.top_p = 2;
  EXPECT_NE(rejection(e, p100, hot).find("top_p"), std::string::npos);
  EXPECT_NE(rejection(e, p100, testing::greedy(4), 0).find("n must be in"), std::string::npos);
  EXPECT_FALSE(e.has_unfinished()) << "a rejected request must leave nothing queued";

  EngineOptions ctx_limited;
  ctx_limited.n_ctx = 64;
  ctx_limited.kv_blocks = 100;
  Engine e2(*model_, pool, ctx_limited);
  msg = rejection(e2, testing::make_prompt(60, 1), testing::greedy(5));
  EXPECT_NE(msg.find("exceeds the context of 64 tokens"), std::string::npos) << msg;
  // Exactly at the limit is fine.
  EXPECT_NO_THROW(e2.add_request(testing::make_prompt(60, 1), testing::greedy(4)));
}

TEST_F(EngineTest, UnboundedRequestStopsWhenItsContextIsFull) {
  ThreadPool pool(1);
  EngineOptions o;
  o.n_ctx = 24;
  o.kv_blocks = 64;
  o.block_size = 4;
  Engine e(*model_, pool, o);
  SamplingParams p = testing::greedy(1);
  p.max_tokens.reset();
  const RequestId id = e.add_request(testing::make_prompt(10, 3), p);
  EngineRecorder rec;
  while (e.has_unfinished()) rec.record(e.step());
  EXPECT_EQ(rec.at(id, 0).tokens.size(), 14u);
  EXPECT_EQ(rec.at(id, 0).finish, FinishReason::Length);
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
}

// The phase times nest: the phases inside the forward passes, the forward
// passes inside the steps; each grows with every step that computes.
TEST_F(EngineTest, StepTimesNestAndGrowWithEveryStep) {
  ThreadPool pool(2);
  EngineOptions o;
  o.kv_blocks = 64;
  o.block_size = 4;
  Engine e(*model_, pool, o);
  const EngineStats start = e.stats();
  EXPECT_EQ(start.step_seconds, 0.0);
  EXPECT_EQ(start.forward_seconds, 0.0);
  for (int i = 0; i < 3; ++i) e.add_request(testing::make_prompt(9 + i, 5 + i), testing::greedy(6));
  EngineStats before = e.stats();
  while (e.has_unfinished()) {
    e.step();
    const EngineStats s = e.stats();
    EXPECT_GT(s.step_seconds, before.step_seconds);
    EXPECT_GT(s.forward_seconds, before.forward_seconds);
    EXPECT_GT(s.weight_matmul_seconds, before.weight_matmul_seconds);
    EXPECT_GT(s.output_matmul_seconds, before.output_matmul_seconds);  // every step samples
    EXPECT_GT(s.attention_seconds, before.attention_seconds);
    EXPECT_LE(s.forward_seconds, s.step_seconds);
    EXPECT_LE(s.weight_matmul_seconds + s.output_matmul_seconds + s.attention_seconds,
              s.forward_seconds);
    before = s;
  }
}

TEST_F(EngineTest, EosEndsWithStopAndIsNotEmitted) {
  ThreadPool pool(1);
  const auto prompt = testing::make_prompt(12, 8);
  const testing::Trace alone = testing::run_alone(*model_, prompt, 6);
  EngineOptions o;
  o.kv_blocks = 64;
  o.eos_token_ids = {alone.tokens[3]};  // the 4th greedy token plays EOS
  Engine e(*model_, pool, o);
  SamplingParams p = testing::greedy(6);
  p.ignore_eos = false;
  const RequestId id = e.add_request(prompt, p);
  EngineRecorder rec;
  while (e.has_unfinished()) rec.record(e.step());
  const testing::Trace& t = rec.at(id, 0);
  // Tokens before the first occurrence of the EOS id, then "stop".
  const auto first = std::find(alone.tokens.begin(), alone.tokens.end(), alone.tokens[3]);
  EXPECT_EQ(t.tokens, std::vector<int32_t>(alone.tokens.begin(), first));
  EXPECT_EQ(t.finish, FinishReason::Stop);
}

TEST_F(EngineTest, ForkedBranchesSharePromptBlocksAndCopyOnlyThePartialOne) {
  ThreadPool pool(1);
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 64;
  Engine e(*model_, pool, o);
  // 20 prompt tokens: one full block and a partial one.
  e.add_request(testing::make_prompt(20, 4), testing::greedy(5), 4);
  e.step();  // prefill + fork + first tokens
  EngineStats s = e.stats();
  EXPECT_EQ(s.running, 4);
  EXPECT_EQ(s.kv_blocks_used, 2) << "four branches share the prompt's two blocks";
  e.step();  // each branch writes position 20: the shared partial block is copied 3 times
  s = e.stats();
  EXPECT_EQ(s.kv_blocks_used, 2 + 3);
  EXPECT_EQ(s.kv_slots_used, 16 + 4 * 5) << "shared full block once, four private partial blocks";
  while (e.has_unfinished()) e.step();
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
}

// Branch b of an n-way request samples exactly as a lone request with seed +
// b: forking (shared blocks, copy-on-write) changes nothing a branch sees.
TEST_F(EngineTest, SampledBranchesMatchLoneRequestsWithTheirSeeds) {
  ThreadPool pool(2);
  EngineOptions o;
  o.block_size = 4;
  o.kv_blocks = 200;
  const auto prompt = testing::make_prompt(18, 6);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0;
  p.seed = 1234;
  p.max_tokens = 12;
  p.ignore_eos = true;

  EngineRecorder forked;
  Engine e(*model_, pool, forked.hook(o));
  const RequestId id = e.add_request(prompt, p, 3);
  while (e.has_unfinished()) forked.record(e.step());

  for (int b = 0; b < 3; ++b) {
    EngineRecorder lone;
    Engine e1(*model_, pool, lone.hook(o));
    SamplingParams pb = p;
    pb.seed = 1234 + b;
    const RequestId id1 = e1.add_request(prompt, pb);
    while (e1.has_unfinished()) lone.record(e1.step());
    EXPECT_EQ(forked.at(id, b).tokens, lone.at(id1, 0).tokens) << "branch " << b;
    EXPECT_EQ(forked.at(id, b).logits, lone.at(id1, 0).logits) << "branch " << b;
  }
  EXPECT_NE(forked.at(id, 0).tokens, forked.at(id, 1).tokens)
      << "different seeds should give different samples";
}

TEST_F(EngineTest, AbortFreesEverythingAndEmitsNothingMore) {
  ThreadPool pool(1);
  EngineOptions o;
  o.block_size = 8;
  o.kv_blocks = 40;
  Engine e(*model_, pool, o);
  const RequestId a = e.add_request(testing::make_prompt(30, 1), testing::greedy(50), 2);
  const RequestId b = e.add_request(testing::make_prompt(10, 2), testing::greedy(50));
  for (int i = 0; i < 3; ++i) e.step();
  EXPECT_TRUE(e.abort(a));
  EXPECT_FALSE(e.abort(a));
  EXPECT_FALSE(e.abort(12345));
  for (const StepEvent& ev : e.step()) EXPECT_NE(ev.request, a);
  EXPECT_TRUE(e.stop_branch(b, 0));
  EXPECT_FALSE(e.has_unfinished());
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
}

// Random arrivals, lengths, n, sampling, aborts and stop_branch calls on
// pools small enough to preempt constantly; every request must end exactly
// once and the pool must come back whole.
TEST_F(EngineTest, RandomizedStressLeaksNoBlock) {
  std::mt19937 rng(2024);
  int total_preemptions = 0;
  for (int round = 0; round < 12; ++round) {
    const int threads = 1 + round % 3;
    ThreadPool pool(threads);
    EngineOptions o;
    o.block_size = 1 << (rng() % 5);  // 1..16
    o.kv_blocks = int32_t(96 / o.block_size + rng() % 8);
    o.max_batched_tokens = 1 + int32_t(rng() % 40);
    o.max_seqs = 1 + int32_t(rng() % 8);
    o.enable_prefix_cache = rng() % 2;
    o.eos_token_ids = {int32_t(3 + rng() % 256)};
    Engine e(*model_, pool, o);
    std::map<RequestId, int> open_branches;
    std::set<std::pair<RequestId, int>> finished;
    int step = 0;
    for (int added = 0; added < 14 || e.has_unfinished(); ++step) {
      ASSERT_LT(step, 5000);
      if (added < 14 && rng() % 3 == 0) {
        const int len = 1 + int(rng() % 60);
        SamplingParams p;
        p.temperature = rng() % 2 ? 0.0f : 0.9f;
        p.seed = rng();
        p.max_tokens = 1 + int(rng() % std::max(1, std::min(30, e.max_sequence_tokens() - len)));
        p.ignore_eos = rng() % 2;
        const int n = 1 + int(rng() % std::min(3, o.max_seqs));
        // Prompts often share a head so the prefix cache is exercised.
        std::vector<int32_t> prompt = testing::make_prompt(len, rng() % 3 ? 7 : uint32_t(rng()));
        if (len >= e.max_sequence_tokens()) continue;
        const RequestId id = e.add_request(prompt, p, n);
        open_branches[id] = n;
        ++added;
      }
      if (!open_branches.empty() && rng() % 17 == 0) {
        auto it = open_branches.begin();
        std::advance(it, rng() % open_branches.size());
        if (rng() % 2) {
          e.abort(it->first);
          open_branches.erase(it);
        } else if (e.stop_branch(it->first, int(rng() % 3))) {
          if (--it->second == 0) open_branches.erase(it);
        }
      }
      for (const StepEvent& ev : e.step()) {
        ASSERT_TRUE(open_branches.count(ev.request)) << "event for a closed request";
        ASSERT_FALSE(finished.count({ev.request, ev.branch})) << "event after finish";
        if (ev.finish) {
          finished.insert({ev.request, ev.branch});
          if (--open_branches[ev.request] == 0) open_branches.erase(ev.request);
        }
      }
      const EngineStats s = e.stats();
      ASSERT_LE(s.kv_slots_used, s.kv_slots_allocated);
      ASSERT_LE(s.running, std::max(o.max_seqs, 3));
    }
    EXPECT_TRUE(open_branches.empty());
    const EngineStats s = e.stats();
    EXPECT_EQ(s.kv_blocks_free, e.n_blocks()) << "round " << round;
    total_preemptions += int(s.preemptions);
  }
  EXPECT_GT(total_preemptions, 0) << "the stress pools were meant to force preemption";
}

}  // namespace
}  // namespace kvforge
