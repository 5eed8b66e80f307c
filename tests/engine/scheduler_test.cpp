// The scheduler alone, over a real BlockManager and no model: token budget,
// decodes before prefill chunks, chunked prefill, max_seqs, preemption of
// the newest sequence by recompute, prefix-cache reuse at admission.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include "scheduler_chunks.h"

namespace kvforge {
namespace scheduler_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

std::unique_ptr<Sequence> make_seq(SeqId id, int32_t prompt_len, int32_t first_token = 10) {
  auto s = std::make_unique<Sequence>();
  s->id = id;
  s->request = id;
  for (int32_t i = 0; i < prompt_len; ++i) s->tokens.push_back(first_token + i);
  s->n_prompt = prompt_len;
  s->max_tokens = 100;
  s->max_len = 1000;
  return s;
}

// What the runner and the engine would do with the step: advance
// n_computed, register computed blocks, append a sampled token.
void run_step(BlockManager& blocks, const SchedulerOutput& out) {
  for (const ScheduledChunk& c : out.chunks) {
    EXPECT_EQ(c.start, c.seq->n_computed);
    c.seq->n_computed += c.n;
    EXPECT_EQ(blocks.seq_tokens(c.seq->id), c.seq->n_computed) << "blocks reserved = computed";
    blocks.mark_computed(c.seq->id, c.seq->tokens, c.seq->n_computed);
    EXPECT_EQ(c.wants_logits, c.seq->n_computed == c.seq->len());
    if (c.wants_logits) c.seq->tokens.push_back(7);
  }
  blocks.take_pending_copies();
}

using testing::Chunk;
using testing::chunks_of;

TEST(SchedulerTest, ChunkedPrefillWithinTheTokenBudgetAndDecodesFirst) {
  BlockManager blocks(64, 4, false);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 10});
  sched.add(make_seq(0, 13));
  SchedulerOutput out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 0, 10}}));
  EXPECT_EQ(out.n_tokens, 10);
  run_step(blocks, out);
  sched.add(make_seq(1, 25));
  out = sched.schedule();  // the rest of seq 0's prompt, then seq 1 fills the budget
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 10, 3}, {1, 0, 7}}));
  run_step(blocks, out);
  out = sched.schedule();  // seq 0 decodes first, seq 1 continues its prefill
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 13, 1}, {1, 7, 9}}));
  run_step(blocks, out);
  out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 14, 1}, {1, 16, 9}}));
  run_step(blocks, out);
  out = sched.schedule();  // both decode
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 15, 1}, {1, 25, 1}}));
}

TEST(SchedulerTest, MaxSeqsCapsTheRunningSetCountingPendingForks) {
  BlockManager blocks(64, 4, false);
  Scheduler sched(blocks, {.max_seqs = 3, .max_batched_tokens = 100});
  auto forked = make_seq(0, 5);
  forked->pending_forks = 1;  // n = 2
  sched.add(std::move(forked));
  sched.add(make_seq(1, 5));
  sched.add(make_seq(2, 5));
  const SchedulerOutput out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 0, 5}, {1, 0, 5}}));
  EXPECT_EQ(sched.n_running(), 2);
  EXPECT_EQ(sched.n_waiting(), 1);
}

TEST(SchedulerTest, OutOfBlocksPreemptsTheNewestAndAdmitsNothingThatStep) {
  // 4 blocks of 4 positions: two 8-token prompts fill the pool exactly.
  BlockManager blocks(4, 4, false);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 100});
  sched.add(make_seq(0, 8));
  sched.add(make_seq(1, 8, 50));
  SchedulerOutput out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 0, 8}, {1, 0, 8}}));
  EXPECT_EQ(blocks.n_free_blocks(), 0);
  run_step(blocks, out);
  sched.add(make_seq(2, 1, 90));
  // Seq 0's decode needs a fifth block: seq 1 (newest) is preempted; seq 0
  // takes a block, and seq 2 is not admitted although one block is free.
  out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 8, 1}}));
  EXPECT_EQ(out.n_preempted, 1);
  EXPECT_EQ(sched.preemptions(), 1);
  EXPECT_EQ(sched.n_running(), 1);
  EXPECT_EQ(sched.n_waiting(), 2);
  EXPECT_FALSE(blocks.has_seq(1));
  run_step(blocks, out);
  // Seq 1 comes back first (front of the queue), recomputing prompt and its token.
  out = sched.schedule();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[0].seq->id, 0);
  EXPECT_EQ(out.chunks[1].seq->id, 1);
  EXPECT_EQ(out.chunks[1].start, 0);
  EXPECT_EQ(out.chunks[1].n, 4) << "as much of the 9 tokens as the one free block holds";
  EXPECT_FALSE(out.chunks[1].wants_logits);
}

TEST(SchedulerTest, APreemptedSequenceThatIsTheNewestPreemptsItself) {
  BlockManager blocks(2, 4, false);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 100});
  sched.add(make_seq(0, 4));
  sched.add(make_seq(1, 4, 50));
  run_step(blocks, sched.schedule());
  // Both need a new block, none is free: seq 0 preempts seq 1 and runs.
  const SchedulerOutput out = sched.schedule();
  EXPECT_EQ(chunks_of(out), (std::vector<Chunk>{{0, 4, 1}}));
  EXPECT_EQ(out.n_preempted, 1);
}

TEST(SchedulerTest, PrefixCacheHitIsNotRecomputed) {
  BlockManager blocks(16, 4, true);
  Scheduler sched(blocks, {.max_seqs = 8, .max_batched_tokens = 100});
  sched.add(make_seq(0, 10));
  run_step(blocks, sched.schedule());
  sched.add(make_seq(1, 11));  // same first 10 tokens: two full blocks cached
  const SchedulerOutput out = sched.schedule();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[1].seq->id, 1);
  EXPECT_EQ(out.chunks[1].start, 8);
  EXPECT_EQ(out.chunks[1].n, 3);
  EXPECT_EQ(blocks.prefix_stats().tokens_reused, 8);
}

TEST(SchedulerTest, RemoveFreesBlocksOfRunningAndForgetsWaiting) {
  BlockManager blocks(8, 4, false);
  Scheduler sched(blocks, {.max_seqs = 1, .max_batched_tokens = 100});
  sched.add(make_seq(0, 6));
  sched.add(make_seq(1, 6));
  run_step(blocks, sched.schedule());
  EXPECT_EQ(blocks.n_free_blocks(), 6);
  sched.remove(sched.find_request(1).at(0));
  sched.remove(sched.find_request(0).at(0));
  EXPECT_TRUE(sched.empty());
  EXPECT_EQ(blocks.n_free_blocks(), 8);
}

}  // namespace scheduler_test
}  // namespace kvforge
