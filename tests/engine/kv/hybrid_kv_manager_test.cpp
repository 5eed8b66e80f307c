// A hybrid model's cache: K/V blocks for the full-attention layers only,
// recurrent-state slots beside them (kv/recurrent_state_pool.h,
// kv/hybrid_kv_manager.h), and the planner's figures equal to the engine's.
#include "engine/kv/hybrid_kv_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/kv_memory_plan.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/kv/recurrent_state_pool.h"
#include "engine_test_util.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

ModelConfig hybrid_config() {
  RandomModelSpec s;
  s.arch = "qwen35";
  s.n_layer = 8;
  s.head_dim = 32;
  const auto bytes = make_random_model(s).to_bytes();
  return ModelConfig::from_gguf(gguf::GgufFile::from_bytes(bytes, "q35"));
}

TEST(HybridKv, RecurrentLayersHoldNoKvBlocks) {
  const ModelConfig c = hybrid_config();
  const KvLayerGroups g = KvLayerGroups::of(c);
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups[0].layers, (std::vector<int>{3, 7}));
  EXPECT_EQ(g.slots, 2);
  EXPECT_EQ(g.group_of_layer[0], -1);
  // The planner's bytes are the engine's: a block of 16 tokens holds 16
  // tokens of K/V of the 2 attention layers.
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  const ModelShape shape = ModelShape::from_config(c);
  EXPECT_EQ(PagedKvCache::block_bytes(c, 16, f16), 16 * kv_bytes_per_token(shape, f16));
  EXPECT_EQ(kv_bytes_per_token(shape, f16), c.kv_bytes_per_token(2));
  EXPECT_EQ(kv_bytes_per_token(shape, f16), uint64_t(2 * 2 * 64 * 2));
  EXPECT_EQ(kv_bytes_per_sequence(shape, f16, 100),
            100 * kv_bytes_per_token(shape, f16) + c.state_bytes_per_sequence());
}

TEST(HybridKv, StatePoolSlots) {
  const ModelConfig c = hybrid_config();
  RecurrentStatePool pool(c, 2);
  EXPECT_EQ(pool.bytes(), 2 * c.state_bytes_per_sequence());
  const int32_t a = pool.allocate(), b = pool.allocate();
  EXPECT_FALSE(pool.can_allocate());
  EXPECT_THROW(pool.allocate(), std::length_error);
  RecurrentState sa = pool.state(0, a);
  sa.matrix[5] = 2.5f;
  sa.conv[1] = -1.0f;
  *sa.n_past = 7;
  pool.copy(a, b);
  const RecurrentState sb = pool.state(0, b);
  EXPECT_EQ(sb.matrix[5], 2.5f);
  EXPECT_EQ(sb.conv[1], -1.0f);
  EXPECT_EQ(*sb.n_past, 7);
  EXPECT_THROW(pool.state(3, a), std::out_of_range);  // layer 3 is full attention
  pool.release(b);
  EXPECT_THROW(pool.release(b), std::logic_error);
  EXPECT_EQ(*pool.state(0, pool.allocate()).n_past, 0) << "a new slot starts empty";
}

TEST(HybridKv, AdmissionNeedsBlocksAndSlots) {
  const ModelConfig c = hybrid_config();
  BlockManager with_prefix(64, 16, true);
  RecurrentStatePool pool(c, 2);
  EXPECT_THROW(HybridKvManager(with_prefix, pool), std::logic_error);
  BlockManager blocks(64, 16, false);
  HybridKvManager kv(blocks, pool);
  const std::vector<int32_t> prompt(40, 7);
  EXPECT_EQ(kv.cached_prefix(prompt), 0);
  EXPECT_FALSE(kv.can_admit(prompt, 40, 3)) << "3 branches need 3 state slots";
  ASSERT_TRUE(kv.can_admit(prompt, 40, 2));
  EXPECT_EQ(kv.admit(1, prompt, 40), 0);
  *kv.state(0, 1).n_past = 40;
  kv.state(0, 1).matrix[0] = 3.0f;
  kv.fork(1, 2);
  EXPECT_EQ(*kv.state(0, 2).n_past, 40);
  EXPECT_EQ(kv.state(0, 2).matrix[0], 3.0f);
  EXPECT_FALSE(kv.can_admit(prompt, 1, 1)) << "both slots are taken";
  const int32_t free_blocks = blocks.n_free_blocks();
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_GT(blocks.n_free_blocks(), free_blocks);
  EXPECT_THROW(kv.state(0, 1), std::out_of_range);
}

// n > 1 on a hybrid model: the branches fork after the prompt, each with a
// copy of its states; greedy branches all give the lone request's tokens and
// logits, and every block and state slot comes back. More branches than
// state slots (max_seqs) are refused.
TEST(HybridKv, ForkedBranchesCopyTheStatesInTheEngine) {
  RandomModelSpec spec;
  spec.arch = "qwen35";
  spec.n_layer = 8;
  spec.head_dim = 32;
  spec.n_ctx = 256;
  const auto model = testing::make_test_model(spec);
  const std::vector<int32_t> prompt = testing::make_prompt(21, 3);
  const testing::Trace alone = testing::run_alone(*model, prompt, 7);
  ThreadPool pool(2);
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 64;
  o.max_seqs = 4;
  testing::EngineRecorder rec;
  Engine e(*model, pool, rec.hook(o));
  const RequestId id = e.add_request(prompt, testing::greedy(7), 3);
  EXPECT_THROW(e.add_request(prompt, testing::greedy(7), 5), std::invalid_argument);
  while (e.has_unfinished()) rec.record(e.step());
  for (int b = 0; b < 3; ++b) {
    const testing::Trace& t = rec.at(id, b);
    EXPECT_EQ(t.tokens, alone.tokens) << "branch " << b;
    ASSERT_EQ(t.logits.size(), alone.logits.size());
    for (size_t k = 0; k < t.logits.size(); ++k)
      EXPECT_EQ(t.logits[k], alone.logits[k]) << "branch " << b << " token " << k;
  }
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
}

}  // namespace
}  // namespace kvforge
