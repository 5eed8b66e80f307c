// Prefix caching for a hybrid model (kv/state_snapshots.h,
// kv/hybrid_kv_manager.h): a prompt leaves a snapshot of its recurrent
// states at its last block boundary; a later prompt starting with those
// tokens reuses their K/V and the restored states, computing only the rest,
// and gives the same bits as a cold run (SequenceRunner alone), whatever the
// prefill chunking.
#include "engine/kv/state_snapshots.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine_test_util.h"
#include "kvforge/engine.h"
#include "model/model.h"

namespace kvforge {
namespace {

void expect_same(const testing::Trace& got, const testing::Trace& want, const char* what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  ASSERT_EQ(got.logits.size(), want.logits.size()) << what;
  for (size_t i = 0; i < want.logits.size(); ++i)
    EXPECT_EQ(got.logits[i], want.logits[i]) << what << ": logits of token " << i;
}

// Runs one request to the end; its trace and the tokens reused for it.
std::pair<testing::Trace, int64_t> run(Engine& e, testing::EngineRecorder& rec,
                                       const std::vector<int32_t>& prompt, int n) {
  const int64_t before = e.stats().prefix.tokens_reused;
  const RequestId id = e.add_request(prompt, testing::greedy(n));
  while (e.has_unfinished()) rec.record(e.step());
  return {rec.at(id, 0), e.stats().prefix.tokens_reused - before};
}

TEST(StateSnapshots, PrefixHitGivesTheColdRunsBits) {
  const auto model = testing::make_hybrid_engine_test_model();
  const std::vector<int32_t> prompt = testing::make_prompt(53, 4);
  std::vector<int32_t> longer = prompt;
  for (int32_t t : testing::make_prompt(11, 9)) longer.push_back(t);
  const testing::Trace cold = testing::run_alone(*model, prompt, 6);
  const testing::Trace cold_longer = testing::run_alone(*model, longer, 6);
  for (int32_t chunk : {512, 7}) {  // 7: the boundary at 48 falls inside a prefill chunk
    SCOPED_TRACE("max_batched_tokens " + std::to_string(chunk));
    ThreadPool pool(2);
    const EngineOptions o = testing::hybrid_prefix_options(chunk);
    testing::EngineRecorder rec;
    Engine e(*model, pool, rec.hook(o));
    const auto [first, first_reused] = run(e, rec, prompt, 6);
    EXPECT_EQ(first_reused, 0);
    expect_same(first, cold, "first run (takes the snapshot)");
    const auto [again, again_reused] = run(e, rec, prompt, 6);
    EXPECT_EQ(again_reused, 48) << "the prompt's 3 full blocks before its last token";
    expect_same(again, cold, "the same prompt again (prefix hit)");
    const auto [extended, extended_reused] = run(e, rec, longer, 6);
    EXPECT_EQ(extended_reused, 48);
    expect_same(extended, cold_longer, "a longer prompt with that prefix");
    EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
  }
}

// Without snapshots a hybrid model reuses nothing (the state after a prefix
// cannot be rebuilt from its K/V), and the snapshots' memory is counted.
TEST(StateSnapshots, OffByDefaultAndCountedInThePool) {
  const auto model = testing::make_hybrid_engine_test_model();
  const std::vector<int32_t> prompt = testing::make_prompt(40, 2);
  ThreadPool pool(1);
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 32;
  o.max_seqs = 2;
  testing::EngineRecorder rec;
  Engine plain(*model, pool, rec.hook(o));
  run(plain, rec, prompt, 2);
  EXPECT_EQ(run(plain, rec, prompt, 2).second, 0);
  o.state_snapshots = 3;
  Engine with(*model, pool, o);
  EXPECT_EQ(with.kv_pool_bytes(),
            plain.kv_pool_bytes() + 3 * model->config().state_bytes_per_sequence());
}

// The store itself: longest match only over finished snapshots whose tokens
// are a prefix, no longer than asked; a pending one is never found.
TEST(StateSnapshots, LookupAndEviction) {
  const auto model = testing::make_hybrid_engine_test_model();
  StateSnapshots s(model->config(), 2);
  const std::vector<int32_t> t = testing::make_prompt(40, 1);
  const std::span<const int32_t> all(t);
  const int32_t a = s.take(all.first(16));
  EXPECT_EQ(s.longest(all, 40).entry, -1) << "pending";
  s.finish(a);
  EXPECT_EQ(s.longest(all, 40).length, 16);
  EXPECT_EQ(s.longest(all, 15).entry, -1) << "longer than allowed";
  const int32_t b = s.take(all.first(32));
  s.finish(b);
  EXPECT_EQ(s.longest(all, 40).length, 32);
  EXPECT_EQ(s.longest(all, 31).length, 16);
  std::vector<int32_t> other = t;
  other[3] += 1;
  EXPECT_EQ(s.longest(other, 40).entry, -1) << "tokens compared in full";
  const int32_t c = s.take(std::span<const int32_t>(other).first(16));  // evicts the oldest, a
  EXPECT_EQ(c, a);
  EXPECT_EQ(s.longest(all, 31).entry, -1);
  s.drop(c);
  EXPECT_FALSE(s.has(std::span<const int32_t>(other).first(16)));
}

}  // namespace
}  // namespace kvforge
