// Context shift in the engine (EngineOptions::context_shift,
// engine_shift.cpp): a request goes past its context with the pool's blocks
// and nothing leaks; until the first shift it is the plain engine; static
// slots give the paged engine's tokens and logits bit for bit; a block or
// slot whose K a shift re-rotated is never served as a prefix; the setups
// that cannot shift refuse it by name.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "static_pipeline/static_test_util.h"

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

// small_static_config's slots hold 40 + 24 = 64 positions: the paged context above.
std::unique_ptr<Engine> static_shifting(const Model& model, ThreadPool& pool,
                                        testing::EngineRecorder& rec, bool reuse_slots,
                                        int32_t max_prompt_len = 40) {
  EngineOptions o;
  o.context_shift = true;
  o.n_keep = 1;
  o.reuse_slots = reuse_slots;
  StaticConfig c = testing::small_static_config(1);
  c.min_response_len += c.max_prompt_len - max_prompt_len;
  c.max_prompt_len = max_prompt_len;
  return std::make_unique<Engine>(model, pool, compile_plans(model, c, 1), rec.hook(o));
}

TEST_F(EngineShiftTest, StaticSlotsShiftAsThePagedPoolBitForBit) {
  const std::vector<int32_t> prompt = testing::make_prompt(10, 3);
  ThreadPool pool(1);
  EngineRecorder paged_rec, static_rec;
  Engine paged(*model_, pool, paged_rec.hook(shifting()));
  const testing::Trace want = run(paged, paged_rec, prompt, 300);
  const std::unique_ptr<Engine> slots = static_shifting(*model_, pool, static_rec, false);
  const testing::Trace got = run(*slots, static_rec, prompt, 300);
  EXPECT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logits.size(), want.logits.size());
  for (size_t i = 0; i < got.logits.size(); ++i) ASSERT_EQ(got.logits[i], want.logits[i]) << i;
  EXPECT_EQ(slots->stats().context_shifts, paged.stats().context_shifts);
  EXPECT_GE(slots->stats().context_shifts, 15);
  EXPECT_EQ(slots->stats().kv_slots_used, 0);
}

// A slot kept for reuse after a shift offers a later prompt only its kept
// head: what follows was computed with the dropped tokens in view. The later
// prompt is exactly what the slot holds, so without the guard it would be
// served almost whole (and its logits would differ from a cold run).
TEST_F(EngineShiftTest, AShiftedSlotIsReusedOnlyUpToItsKeptHead) {
  const std::vector<int32_t> prompt = testing::make_prompt(30, 5);
  ThreadPool pool(1);
  EngineRecorder rec;
  const std::unique_ptr<Engine> e = static_shifting(*model_, pool, rec, true, 56);
  const testing::Trace first = run(*e, rec, prompt, 60);
  const int64_t shifts = e->stats().context_shifts;
  ASSERT_GT(shifts, 0);
  // Each shift dropped the 16 tokens after the kept block: the slot holds the rest.
  std::vector<int32_t> held = prompt;
  held.insert(held.end(), first.tokens.begin(), first.tokens.end() - 1);
  held.erase(held.begin() + 16, held.begin() + 16 + 16 * shifts);
  ASSERT_GT(held.size(), 40u);
  held.resize(std::min<size_t>(held.size() - 1, 56));  // a prefix of it, within max_prompt_len
  const int64_t reused_before = e->stats().prefix.tokens_reused;
  const testing::Trace warm = run(*e, rec, held, 4);
  const testing::Trace cold = testing::run_alone(*model_, held, 4);
  EXPECT_EQ(warm.tokens, cold.tokens);
  ASSERT_EQ(warm.logits.size(), cold.logits.size());
  for (size_t i = 0; i < warm.logits.size(); ++i) EXPECT_EQ(warm.logits[i], cold.logits[i]) << i;
  const int64_t reused = e->stats().prefix.tokens_reused - reused_before;
  EXPECT_LE(reused, 16) << "the slot offered positions a shift had moved";
}

// A request asks for a shift on an engine started without one, with its own n_keep.
TEST_F(EngineShiftTest, ARequestAsksForAShiftWithItsOwnKeep) {
  const std::vector<int32_t> prompt = testing::make_prompt(20, 7);
  ThreadPool pool(1);
  EngineRecorder rec, rec_all;
  EngineOptions plain = shifting();
  plain.context_shift = false;
  Engine e(*model_, pool, rec.hook(plain));
  SamplingParams p = testing::greedy(200);
  p.context_shift = true;
  p.n_keep = -1;  // the whole prompt: 20 tokens, two blocks kept
  const RequestId id = e.add_request(prompt, p);
  while (e.has_unfinished()) rec.record(e.step());
  EXPECT_EQ(rec.at(id, 0).tokens.size(), 200u);
  // The engine started with the shift and n_keep 32 gives the same tokens.
  EngineOptions keep32 = shifting();
  keep32.n_keep = 32;
  Engine all(*model_, pool, rec_all.hook(keep32));
  EXPECT_EQ(run(all, rec_all, prompt, 200).tokens, rec.at(id, 0).tokens);
  EXPECT_EQ(e.stats().context_shifts, all.stats().context_shifts);
  // Without the request's flag the context bounds it; a disk-tier engine refuses the flag.
  EXPECT_THROW(e.add_request(prompt, testing::greedy(200)), RequestRejected);
  EngineOptions disk = plain;
  disk.kv_disk_dir = ::testing::TempDir() + "kvforge-shift-request";
  disk.on_warning = [](const std::string&) {};
  Engine tiered(*model_, pool, disk);
  try {
    tiered.add_request(prompt, p);
    FAIL() << "a request shifted over the disk tier";
  } catch (const RequestRejected& err) {
    EXPECT_NE(std::string(err.what()).find("the KV disk tier"), std::string::npos) << err.what();
  }
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
