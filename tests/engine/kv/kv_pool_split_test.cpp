// A hybrid model's KV budget (--kv-memory) holds its recurrent-state slots
// and its K/V blocks together (kv/kv_pool_split.h): the planner's split and
// the engine's pool are the same numbers, and the engine runs as many
// sequences of its context at once as the planner says fit.
#include "engine/kv/kv_pool_split.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "engine_test_util.h"
#include "kvforge/engine.h"
#include "model/model.h"

namespace kvforge {
namespace {

constexpr int64_t kCtx = 64, kSplitBlock = 16;

TEST(KvPoolSplit, StateSlotsForSequencesOfTheContext) {
  const auto model = testing::make_hybrid_engine_test_model();
  const ModelShape s = ModelShape::from_config(model->config());
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  const uint64_t per_seq = kv_bytes_per_sequence(s, f16, kCtx, kSplitBlock);
  ASSERT_GT(s.state_bytes_per_sequence, 0u);
  const uint64_t budget = 3 * per_seq + per_seq / 2;  // 3.5 sequences
  const KvPoolSplit p = split_kv_pool(s, f16, budget, kCtx, kSplitBlock, 64);
  EXPECT_EQ(p.state_slots, 3);
  EXPECT_EQ(p.state_bytes, 3 * s.state_bytes_per_sequence);
  EXPECT_GE(p.blocks, 3 * kCtx / kSplitBlock) << "each slot's sequence has room for its context";
  EXPECT_LE(p.state_bytes + p.block_bytes, budget);
  EXPECT_EQ(split_kv_pool(s, f16, budget, kCtx, kSplitBlock, 2).state_slots, 2) << "max_seqs caps";
  // A budget short of one whole sequence still gets a slot, and blocks when it holds any.
  const uint64_t state = s.state_bytes_per_sequence;
  const KvPoolSplit small =
      split_kv_pool(s, f16, state + (per_seq - state) / 2, kCtx, kSplitBlock, 64);
  EXPECT_EQ(small.state_slots, 1);
  EXPECT_EQ(small.blocks, kCtx / kSplitBlock / 2);
  EXPECT_EQ(split_kv_pool(s, f16, state, kCtx, kSplitBlock, 64).blocks, 0);
  EXPECT_THROW(split_kv_pool(s, f16, budget, kCtx, kSplitBlock, 0), std::invalid_argument);
  // Without recurrent layers every byte goes to blocks.
  ModelShape dense = s;
  dense.n_recurrent_layers = 0;
  dense.state_bytes_per_sequence = 0;
  const KvPoolSplit d = split_kv_pool(dense, f16, budget, kCtx, kSplitBlock, 64);
  EXPECT_EQ(d.state_slots, 0);
  EXPECT_EQ(d.blocks, kv_pool_blocks(dense, f16, budget, kSplitBlock));
}

// Blocks of kSplitBlock, a context of kCtx, up to 64 sequences.
EngineOptions split_test_options() {
  EngineOptions o;
  o.block_size = int32_t(kSplitBlock);
  o.n_ctx = int32_t(kCtx);
  o.max_seqs = 64;
  return o;
}

// The engine under --kv-memory: the planner's slots, its blocks (capped at
// what those sequences can fill), the pool's bytes within the budget, and
// that many sequences of the context running at once to the end.
TEST(KvPoolSplit, EngineMatchesThePlanner) {
  const auto model = testing::make_hybrid_engine_test_model();
  const ModelShape s = ModelShape::from_config(model->config());
  EngineOptions o = split_test_options();
  const uint64_t budget = 3 * kv_bytes_per_sequence(s, o.kv_format, kCtx, kSplitBlock) + 4096;
  o.kv_memory_mib = double(budget) / 1048576.0;
  const KvPoolSplit p = split_kv_pool(s, o.kv_format, budget, kCtx, kSplitBlock, o.max_seqs);
  ASSERT_EQ(p.state_slots, 3);
  ThreadPool pool(2);
  Engine e(*model, pool, o);
  EXPECT_EQ(e.options().max_seqs, 3) << "sequences run at once = state slots";
  EXPECT_EQ(e.n_blocks(), std::min<int64_t>(p.blocks, 3 * kCtx / kSplitBlock));
  EXPECT_LE(e.kv_pool_bytes(), budget);
  EXPECT_EQ(e.kv_pool_bytes(), p.state_bytes + size_t(e.n_blocks()) * (p.block_bytes / p.blocks));
  for (uint32_t i = 0; i < 4; ++i)
    e.add_request(testing::make_prompt(int(kCtx) - 4, 10 + i), testing::greedy(4));
  int32_t most = 0;
  while (e.has_unfinished()) {
    e.step();
    most = std::max(most, e.stats().running);
  }
  EXPECT_EQ(most, 3) << "three full-context sequences at once, the fourth waits";
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
}

// Snapshots for prefix reuse come out of --kv-memory first: the engine's
// slots and blocks are the planner's split of what is left.
TEST(KvPoolSplit, SnapshotsComeOutOfTheBudgetBeforeTheSplit) {
  const auto model = testing::make_hybrid_engine_test_model();
  const ModelShape s = ModelShape::from_config(model->config());
  EngineOptions o = split_test_options();
  o.state_snapshots = 5;
  const uint64_t held = 5 * s.state_bytes_per_sequence;
  ASSERT_EQ(snapshot_bytes(s, 5), held);
  const uint64_t budget =
      held + 2 * kv_bytes_per_sequence(s, o.kv_format, kCtx, kSplitBlock) + 4096;
  o.kv_memory_mib = double(budget) / 1048576.0;
  const uint64_t left = kv_budget_after_snapshots(s, budget, 5);
  EXPECT_EQ(left, budget - held);
  const KvPoolSplit p = split_kv_pool(s, o.kv_format, left, kCtx, kSplitBlock, o.max_seqs);
  ASSERT_EQ(p.state_slots, 2);
  EXPECT_GT(split_kv_pool(s, o.kv_format, budget, kCtx, kSplitBlock, o.max_seqs).state_slots, 2)
      << "the whole budget would hold more slots";
  ThreadPool pool(2);
  Engine e(*model, pool, o);
  EXPECT_EQ(e.options().max_seqs, 2);
  EXPECT_EQ(e.n_blocks(), std::min<int64_t>(p.blocks, 2 * kCtx / kSplitBlock));
  EXPECT_EQ(kv_budget_after_snapshots(s, budget, 0), budget);
  EXPECT_THROW(kv_budget_after_snapshots(s, held, 5), std::invalid_argument);
  o.kv_memory_mib = double(held) / 1048576.0;
  EXPECT_THROW(Engine(*model, pool, o), std::invalid_argument);
}

TEST(KvPoolSplit, BudgetWithoutRoomForABlockIsRefused) {
  const auto model = testing::make_hybrid_engine_test_model();
  EngineOptions o;
  o.n_ctx = int32_t(kCtx);
  o.kv_memory_mib = double(model->config().state_bytes_per_sequence()) / 1048576.0;
  ThreadPool pool(1);
  try {
    Engine e(*model, pool, o);
    FAIL() << "an engine with a state slot and no block";
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("recurrent-state slot"), std::string::npos) << ex.what();
  }
}

}  // namespace
}  // namespace kvforge
