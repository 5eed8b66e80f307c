// Context shift in the paged engine (EngineOptions::context_shift,
// engine_shift.cpp): a request goes past its context with the pool's blocks
// and nothing leaks; until the first shift it is the plain engine; a block
// whose K a shift re-rotated is never served from the prefix cache; the
// modes and setups that cannot shift refuse it by name.
#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace kvforge {
namespace {

using testing::EngineRecorder;

class EngineShiftTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = testing::make_engine_test_model().release(); }
  static void TearDownTestSuite() { delete model_; }
  static Model* model_;
};
Model* EngineShiftTest::model_ = nullptr;

// A pool of exactly one 64-token context: 4 blocks of 16.
EngineOptions shifting(bool prefix_cache = true) {
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 4;
  o.n_ctx = 64;
  o.max_seqs = 1;
  o.context_shift = true;
  o.n_keep = 1;
  o.enable_prefix_cache = prefix_cache;
  return o;
}

testing::Trace run(Engine& e, EngineRecorder& rec, std::span<const int32_t> prompt, int n) {
  const RequestId id = e.add_request(prompt, testing::greedy(n));
  while (e.has_unfinished()) rec.record(e.step());
  return rec.at(id, 0);
}

TEST_F(EngineShiftTest, GoesPastTheContextInTheSamePool) {
  ThreadPool pool(1);
  EngineRecorder rec;
  Engine e(*model_, pool, rec.hook(shifting()));
  const std::vector<int32_t> prompt = testing::make_prompt(10, 3);
  const testing::Trace t = run(e, rec, prompt, 300);
  ASSERT_EQ(t.tokens.size(), 300u);
  EXPECT_EQ(t.finish, FinishReason::Length);
  const EngineStats s = e.stats();
  // Each shift keeps block 0 and drops one of the three others: 16 positions.
  EXPECT_EQ(s.context_shifts, (10 + 300 - 1 - 64 + 15) / 16);
  EXPECT_LE(s.kv_blocks_used_peak, 4);
  EXPECT_EQ(e.stats().kv_blocks_free, 4) << "blocks leaked";
  // Until the first shift (64 positions) it is the plain engine: the oracle's tokens.
  const testing::Trace alone = testing::run_alone(*model_, prompt, 64 - 10);
  EXPECT_EQ(std::vector<int32_t>(t.tokens.begin(), t.tokens.begin() + 54), alone.tokens);
}

TEST_F(EngineShiftTest, ThePrefixCacheNeverServesARotatedBlock) {
  const std::vector<int32_t> prompt = testing::make_prompt(40, 5);
  ThreadPool pool(1);
  EngineRecorder rec;
  EngineOptions o = shifting();
  o.kv_blocks = 8;  // room for a second sequence beside the cached blocks
  Engine e(*model_, pool, rec.hook(o));
  // Positions 32..47 (prompt and first replies) fill block 2, which the prefix cache indexes;
  // the first shift drops block 1 and moves block 2 down, re-rotating its K.
  const testing::Trace first = run(e, rec, prompt, 100);
  ASSERT_GT(e.stats().context_shifts, 0);
  // A prompt of the same 50 tokens: the cache may serve blocks 0 and 1 (untouched), never the
  // rotated block 2. The logits must be the cold ones, bit for bit.
  std::vector<int32_t> again = prompt;
  again.insert(again.end(), first.tokens.begin(), first.tokens.begin() + 10);
  const testing::Trace warm = run(e, rec, again, 4);
  const testing::Trace cold = testing::run_alone(*model_, again, 4);
  ASSERT_EQ(warm.logits.size(), cold.logits.size());
  for (size_t i = 0; i < warm.logits.size(); ++i) EXPECT_EQ(warm.logits[i], cold.logits[i]) << i;
  EXPECT_GT(e.stats().prefix.tokens_reused, 0) << "the untouched blocks were not reused";
  EXPECT_EQ(e.stats().kv_blocks_free, 8);
}

TEST_F(EngineShiftTest, RefusesWhatCannotShiftByName) {
  ThreadPool pool(1);
  EngineOptions o = shifting();
  o.kv_blocks = 3;
  o.n_ctx = 48;
  try {
    Engine e(*model_, pool, o);
    FAIL() << "a 3-block context shifted";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("at least 4 KV blocks"), std::string::npos)
        << err.what();
  }
  o = shifting();
  o.kv_disk_dir = "/nonexistent-kvforge-shift";
  try {
    Engine e(*model_, pool, o);
    FAIL() << "the disk tier shifted";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("not supported with the KV disk tier"),
              std::string::npos)
        << err.what();
  }
}

TEST_F(EngineShiftTest, RefusesHybridModelsByName) {
  RandomModelSpec spec;
  spec.arch = "qwen35";
  spec.n_layer = 8;
  spec.n_ctx = 256;
  const std::unique_ptr<Model> hybrid = testing::make_test_model(spec);
  ThreadPool pool(1);
  try {
    Engine e(*hybrid, pool, shifting());
    FAIL() << "a hybrid model shifted";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("hybrid models"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace kvforge
