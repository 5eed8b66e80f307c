// The scheduler with a lower tier whose loads land only when the test says
// so: a loading sequence is not scheduled while the others step, lands at
// the start of a later schedule() with its restored prefix (blocks of failed
// files given back and recomputed), and a removed or preempted loading
// sequence has its load cancelled and its blocks freed.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "engine/scheduler.h"
#include "scheduler_chunks.h"

namespace kvforge {
namespace scheduler_tier_test {  // named: the tests build in unity batches

std::unique_ptr<Sequence> make_seq(SeqId id, int32_t prompt_len) {
  auto s = std::make_unique<Sequence>();
  s->id = id;
  s->request = id;
  for (int32_t i = 0; i < prompt_len; ++i) s->tokens.push_back(100 * (id + 1) + i);
  s->n_prompt = prompt_len;
  s->max_tokens = 100;
  s->max_len = 1000;
  return s;
}

// A tier holding `on_tier` blocks of any prompt past any RAM prefix; a load
// ends when the test moves it to `ready` (or, asked to wait, in full).
class FakeTier final : public PrefixTier {
 public:
  struct Load {
    SeqId seq;
    int32_t from_block, n;
  };
  int32_t on_tier = 0;
  std::vector<Load> started;
  std::vector<LoadedPrefix> ready;
  std::vector<SeqId> cancelled;
  int32_t misses = 0;

  int32_t block_size() const override { return 4; }  // the tests' pools
  int32_t available(std::span<const int32_t>, int32_t, int32_t max_blocks) override {
    return std::min(on_tier, max_blocks);
  }
  void start_load(SeqId seq, std::span<const int32_t>, int32_t from_block, int32_t n,
                  int32_t) override {
    started.push_back({seq, from_block, n});
  }
  std::vector<LoadedPrefix> take_loaded(bool wait) override {
    if (wait && ready.empty())
      for (const Load& l : started)
        if (std::count(cancelled.begin(), cancelled.end(), l.seq) == 0)
          ready.push_back({l.seq, l.n});
    std::vector<LoadedPrefix> out;
    out.swap(ready);
    ++takes;
    return out;
  }
  void cancel_load(SeqId seq) override { cancelled.push_back(seq); }
  void note_misses(int32_t n) override { misses += n; }
  void store_computed(std::span<const ComputedRun>) override {}  // the scheduler never writes
  int takes = 0;
};

// What the runner and the engine would do with the step.
void run_step(BlockManager& blocks, const SchedulerOutput& out) {
  for (const ScheduledChunk& c : out.chunks) {
    ASSERT_FALSE(c.seq->loading);
    c.seq->n_computed += c.n;
    blocks.mark_computed(c.seq->id, c.seq->tokens, c.seq->n_computed);
    if (c.wants_logits) c.seq->tokens.push_back(7);
  }
}

using testing::Chunk;
using testing::chunks_of;

TEST(SchedulerTier, ALoadingSequenceWaitsWhileAnotherDecodes) {
  BlockManager blocks(64, 4, true);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 32});
  FakeTier tier;
  sched.set_prefix_tier(&tier);
  sched.add(make_seq(0, 5));
  run_step(blocks, sched.schedule());
  EXPECT_EQ(tier.misses, 1) << "seq 0's one full prompt block was on no tier";
  tier.on_tier = 3;
  sched.add(make_seq(1, 17));  // 4 full prompt blocks, 3 of them on the tier
  for (int step = 0; step < 3; ++step) {
    const SchedulerOutput out = sched.schedule();
    EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 5 + step, 1}})) << "step " << step;
    run_step(blocks, out);
  }
  ASSERT_EQ(tier.started.size(), 1u);
  EXPECT_EQ(tier.started[0].seq, 1);
  EXPECT_EQ(tier.started[0].n, 3);
  EXPECT_EQ(sched.n_loading(), 1);
  EXPECT_EQ(blocks.seq_tokens(1), 12) << "blocks reserved for the restored prefix only";
  tier.ready.push_back({1, 3});
  const SchedulerOutput out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 8, 1}, {1, 12, 5}}));
  EXPECT_EQ(sched.n_loading(), 0);
  EXPECT_EQ(blocks.cached_prefix(sched.running()[1]->tokens), 12)
      << "restored blocks join the prefix cache when they land";
}

TEST(SchedulerTier, BlocksOfFailedFilesAreGivenBackAndRecomputed) {
  BlockManager blocks(64, 4, true);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 32});
  FakeTier tier;
  tier.on_tier = 3;
  sched.set_prefix_tier(&tier);
  sched.add(make_seq(0, 5));
  run_step(blocks, sched.schedule());  // seq 0 loads in full (nothing else to run)
  sched.add(make_seq(1, 17));
  run_step(blocks, sched.schedule());  // seq 0 decodes, seq 1 loads
  const int32_t free_loading = blocks.n_free_blocks();
  tier.ready.push_back({1, 1});  // the second file failed
  const SchedulerOutput out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 6, 1}, {1, 4, 13}}));
  EXPECT_EQ(blocks.n_free_blocks(), free_loading + 2 - 4)
      << "two blocks given back, four taken by positions [4, 17)";
}

TEST(SchedulerTier, WithNothingElseToRunScheduleWaitsForTheLoad) {
  BlockManager blocks(64, 4, true);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 32});
  FakeTier tier;
  tier.on_tier = 2;
  sched.set_prefix_tier(&tier);
  sched.add(make_seq(0, 10));
  EXPECT_EQ(chunks_of(sched.schedule()), (std::vector<Chunk>{{0, 8, 2}}));
  EXPECT_EQ(tier.takes, 1) << "one waiting take, none before: nothing was loading";
}

TEST(SchedulerTier, RemovingALoadingSequenceCancelsItsLoadAndFreesItsBlocks) {
  BlockManager blocks(64, 4, true);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 32});
  FakeTier tier;
  sched.set_prefix_tier(&tier);
  sched.add(make_seq(0, 5));
  run_step(blocks, sched.schedule());
  const int32_t free_before = blocks.n_free_blocks();
  tier.on_tier = 3;
  sched.add(make_seq(1, 17));
  run_step(blocks, sched.schedule());
  ASSERT_EQ(sched.n_loading(), 1);
  sched.remove(sched.find_request(1).at(0));
  EXPECT_EQ(tier.cancelled, (std::vector<SeqId>{1}));
  EXPECT_EQ(sched.n_loading(), 0);
  EXPECT_FALSE(blocks.has_seq(1));
  EXPECT_EQ(blocks.n_free_blocks(), free_before) << "seq 0's decode fits its last block";
}

TEST(SchedulerTier, APreemptedLoadingSequenceIsCancelledAndWaitsAgain) {
  BlockManager blocks(5, 4, true);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 32});
  FakeTier tier;
  sched.set_prefix_tier(&tier);
  sched.add(make_seq(0, 5));
  run_step(blocks, sched.schedule());  // seq 0: 2 blocks
  tier.on_tier = 3;
  sched.add(make_seq(1, 13));
  run_step(blocks, sched.schedule());  // seq 1 takes what leaves room for one computed token
  ASSERT_EQ(sched.n_loading(), 1);
  // seq 0 decodes until it needs a block only seq 1 can give.
  for (int i = 0; i < 8 && tier.cancelled.empty(); ++i) run_step(blocks, sched.schedule());
  EXPECT_EQ(tier.cancelled, (std::vector<SeqId>{1}));
  EXPECT_EQ(sched.n_loading(), 0);
  EXPECT_EQ(sched.n_waiting(), 1);
  EXPECT_EQ(sched.preemptions(), 1);
  EXPECT_FALSE(blocks.has_seq(1));
}

// The static policy (whole-prompt admissions, the engine's static mode) goes
// through the same tier calls and loading state as the paged one: an admitted
// branch loads its blocks past the whole blocks it keeps, is not decoded while
// loading, and lands with them; a branch whose blocks the tier lacks counts
// them as misses.
TEST(SchedulerTier, TheStaticPolicyLoadsThroughTheSameTierCalls) {
  BlockManager blocks(64, 4, true);
  Scheduler sched(blocks, {.max_seqs = 4, .max_batched_tokens = INT32_MAX});
  FakeTier tier;
  sched.set_prefix_tier(&tier);
  sched.add(make_seq(0, 5));
  std::optional<ScheduledChunk> admitted = sched.admit_next();
  ASSERT_TRUE(admitted);
  EXPECT_FALSE(sched.load_prefix(*admitted->seq));
  EXPECT_EQ(tier.misses, 1) << "seq 0's one full prompt block was on no tier";
  run_step(blocks, {{*admitted}, admitted->n, 0});  // the engine fills its slot
  tier.on_tier = 3;
  sched.add(make_seq(1, 17));  // 4 full prompt blocks, 3 of them on the tier
  admitted = sched.admit_next();
  ASSERT_TRUE(admitted);
  Sequence& seq = *admitted->seq;
  EXPECT_TRUE(sched.load_prefix(seq));
  ASSERT_EQ(tier.started.size(), 1u);
  EXPECT_EQ(tier.started[0].seq, 1);
  EXPECT_EQ(tier.started[0].from_block, 0);
  EXPECT_EQ(tier.started[0].n, 3);
  EXPECT_TRUE(seq.loading);
  EXPECT_EQ(chunks_of(sched.schedule_decodes()), (std::vector<Chunk>{{0, 5, 1}}))
      << "the loading branch is not decoded";
  EXPECT_TRUE(sched.land_loads(false).empty()) << "nothing landed yet";
  tier.ready.push_back({1, 2});  // the third file failed
  EXPECT_EQ(sched.land_loads(false), (std::vector<Sequence*>{&seq}));
  EXPECT_FALSE(seq.loading);
  EXPECT_EQ(seq.n_computed, 8) << "two blocks restored, the rest to compute";
  EXPECT_EQ(sched.n_loading(), 0);
}

}  // namespace scheduler_tier_test
}  // namespace kvforge
