// BlockManager with layer groups (sliding windows): which blocks a windowed
// group releases and when, that every question still answers for the sum
// of the groups, and the prefix cache's window rule (a prefix is reused only
// where the blocks its next query reads are still cached).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/kv/kv_layer_groups.h"

namespace kvforge {
namespace {

constexpr BlockId kNo = BlockManager::kNoBlock;

std::vector<int32_t> window_tokens(int n, int32_t from = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), from);
  return t;
}

int32_t held_blocks(const BlockManager& m, SeqId seq, int32_t group) {
  const auto t = m.block_table(seq, group);
  return int32_t(std::count_if(t.begin(), t.end(), [](BlockId b) { return b != kNo; }));
}

TEST(KvLayerGroupsTest, GroupsLayersByAttentionTypeWithEqualSlots) {
  const KvLayerGroups none = KvLayerGroups::of_windows({0, 0, 0});
  ASSERT_EQ(none.groups.size(), 1u);
  EXPECT_EQ(none.slots, 3);
  EXPECT_EQ(none.windows(), std::vector<int32_t>{0});
  EXPECT_FALSE(none.any_window());

  const KvLayerGroups mistral = KvLayerGroups::of_windows({8, 8});
  EXPECT_EQ(mistral.windows(), std::vector<int32_t>{8});
  EXPECT_EQ(mistral.slots, 2);

  // gemma2: even layers windowed. Full group first, same slot count.
  const KvLayerGroups gemma2 = KvLayerGroups::of_windows({8, 0, 8, 0});
  EXPECT_EQ(gemma2.windows(), (std::vector<int32_t>{0, 8}));
  EXPECT_EQ(gemma2.slots, 2);
  EXPECT_EQ(gemma2.groups[0].layers, (std::vector<int>{1, 3}));
  EXPECT_EQ(gemma2.groups[1].layers, (std::vector<int>{0, 2}));
  EXPECT_EQ(gemma2.slot_of_layer, (std::vector<int>{0, 0, 1, 1}));

  // gemma3-4b: 34 layers, every 6th global: 5 full, 29 windowed → 1 + 6 groups of 5 slots.
  std::vector<int32_t> g3(34);
  for (int l = 0; l < 34; ++l) g3[size_t(l)] = l % 6 < 5 ? 1024 : 0;
  const KvLayerGroups gemma3 = KvLayerGroups::of_windows(g3);
  EXPECT_EQ(gemma3.slots, 5);
  ASSERT_EQ(gemma3.groups.size(), 7u);
  EXPECT_EQ(gemma3.groups[0].window, 0);
  EXPECT_EQ(gemma3.groups[6].layers.size(), 4u);
  for (int l = 0; l < 34; ++l) {
    const KvLayerGroup& g = gemma3.groups[size_t(gemma3.group_of_layer[size_t(l)])];
    EXPECT_EQ(g.window, g3[size_t(l)]);
    EXPECT_EQ(g.layers[size_t(gemma3.slot_of_layer[size_t(l)])], l);
  }
}

TEST(BlockManagerWindowTest, RejectsBadGroups) {
  EXPECT_THROW(BlockManager(8, 4, false, {}), std::invalid_argument);
  EXPECT_THROW(BlockManager(8, 4, false, {-1}), std::invalid_argument);
  EXPECT_THROW(BlockManager(8, 4, false, {8, 0}), std::invalid_argument);  // full must come first
}

TEST(BlockManagerWindowTest, WindowedGroupReleasesBlocksNoFutureQueryReads) {
  // B = 4, W = 8: a query at p reads [p - 7, p].
  BlockManager m(64, 4, false, {0, 8});
  const std::vector<int32_t> tokens = window_tokens(40);
  ASSERT_TRUE(m.can_allocate(tokens, 20));
  m.allocate(0, tokens, 20);
  EXPECT_EQ(m.n_free_blocks(), 64 - 2 * 5);  // both groups hold the chunk's 5 blocks
  m.mark_computed(0, tokens, 20);
  // The next query is at 20 and reads from 13: blocks 0..2 (positions 0..11) go.
  const auto windowed = m.block_table(0, 1);
  ASSERT_EQ(windowed.size(), 5u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(windowed[size_t(i)], kNo) << i;
  EXPECT_NE(windowed[3], kNo);
  EXPECT_EQ(held_blocks(m, 0, 0), 5);  // the full group keeps everything
  EXPECT_EQ(held_blocks(m, 0, 1), 2);
  EXPECT_EQ(m.seq_blocks(0), 7);
  EXPECT_EQ(m.n_free_blocks(), 64 - 7);

  // Decode to 100 positions: the windowed group never holds more than
  // ceil(W / B) + 1 = 3 blocks between steps.
  for (int32_t n = 20; n < 40; ++n) {
    ASSERT_TRUE(m.can_append(0, 1));
    m.append(0, 1);
    EXPECT_LE(held_blocks(m, 0, 1), 4) << n;  // + the new position's block
    m.mark_computed(0, tokens, n + 1);
    EXPECT_LE(held_blocks(m, 0, 1), 3) << n;
  }
  EXPECT_EQ(held_blocks(m, 0, 0), 10);
  m.free(0);
  EXPECT_EQ(m.n_free_blocks(), 64);
}

TEST(BlockManagerWindowTest, QuestionsCountEveryGroupAndRefusalsChangeNothing) {
  // 7 blocks, 2 groups: 12 tokens take 3 blocks per group.
  BlockManager m(7, 4, false, {0, 4});
  const std::vector<int32_t> tokens = window_tokens(64);
  EXPECT_TRUE(m.can_allocate(tokens, 12));
  EXPECT_FALSE(m.can_allocate(tokens, 13));  // 4 + 4 > 7
  EXPECT_THROW(m.allocate(0, tokens, 13), std::logic_error);
  EXPECT_FALSE(m.has_seq(0));
  EXPECT_EQ(m.n_free_blocks(), 7);
  m.allocate(0, tokens, 12);
  EXPECT_EQ(m.n_free_blocks(), 1);
  EXPECT_FALSE(m.can_append(0, 1));  // a new block in each group
  EXPECT_THROW(m.append(0, 1), std::logic_error);
  EXPECT_EQ(m.seq_tokens(0), 12);
  EXPECT_EQ(m.n_free_blocks(), 1);
  // Once computed, the windowed group (W = 4) keeps only block 2.
  m.mark_computed(0, tokens, 12);
  EXPECT_EQ(m.n_free_blocks(), 3);
  EXPECT_TRUE(m.can_append(0, 4));
  m.append(0, 4);
  EXPECT_EQ(m.n_free_blocks(), 1);
  m.free(0);
  EXPECT_EQ(m.n_free_blocks(), 7);
}

TEST(BlockManagerWindowTest, MaxBlocksForSeqBoundsWhatASequenceHolds) {
  BlockManager full(1, 16, false);
  EXPECT_EQ(full.max_blocks_for_seq(8192, 512), 512);
  // gemma2-2b-like: W = 4096, B = 16, chunks of 512: ceil(4607 / 16) + 1 = 289.
  BlockManager hybrid(1, 16, false, {0, 4096});
  EXPECT_EQ(hybrid.max_blocks_for_seq(8192, 512), 512 + 289);
  EXPECT_EQ(hybrid.max_blocks_for_seq(100, 512), 7 + 7);  // windows do not bite yet

  // Checked against the manager: the most blocks held over a long chunked run.
  for (const int32_t chunk : {1, 3, 8, 13}) {
    BlockManager m(1024, 4, false, {0, 8, 8});
    const std::vector<int32_t> tokens = window_tokens(300);
    int64_t most = 0;
    m.allocate(0, tokens, chunk);
    for (int32_t n = chunk;;) {
      most = std::max<int64_t>(most, m.n_blocks() - m.n_free_blocks());
      m.mark_computed(0, tokens, n);
      if (n == 300) break;
      const int32_t c = std::min(chunk, 300 - n);
      m.append(0, c);
      n += c;
    }
    EXPECT_LE(most, m.max_blocks_for_seq(300, chunk)) << chunk;
    // ... and is close: the windowed groups' worst alignment may not occur.
    EXPECT_GE(most, m.max_blocks_for_seq(300, chunk) - 4) << chunk;
  }
}

TEST(BlockManagerWindowTest, ForkSharesOnlyHeldBlocks) {
  BlockManager m(32, 4, false, {0, 4});
  const std::vector<int32_t> tokens = window_tokens(30);
  m.allocate(0, tokens, 14);
  m.mark_computed(0, tokens, 14);  // windowed: reads from 11, keeps blocks 2, 3
  m.fork(0, 1);
  EXPECT_EQ(m.seq_blocks(1), 4 + 2);
  EXPECT_EQ(m.n_free_blocks(), 32 - 6);
  ASSERT_TRUE(m.can_append(1, 1));
  m.append(1, 1);  // copy-on-write of the partial last block in both groups
  EXPECT_EQ(m.take_pending_copies().size(), 2u);
  m.free(0);
  m.free(1);
  EXPECT_EQ(m.n_free_blocks(), 32);
}

// --- prefix cache -------------------------------------------------------------

TEST(BlockManagerWindowTest, PrefixReuseNeedsOnlyTheWindowsBlocks) {
  // B = 4, W = 8; 33 tokens: 8 full blocks are reusable.
  BlockManager m(40, 4, true, {0, 8});
  const std::vector<int32_t> tokens = window_tokens(33);
  m.allocate(0, tokens, 33);
  m.mark_computed(0, tokens, 33);  // windowed group reads from 26: blocks 0..5 released
  EXPECT_EQ(held_blocks(m, 0, 1), 3);
  m.free(0);
  EXPECT_EQ(m.n_free_blocks(), 40);
  EXPECT_EQ(m.cached_prefix(tokens), 32);

  // 24 never-cached free blocks, then the LRU: the windowed group's blocks
  // 0..5 left their window first, so they are evicted first.
  const std::vector<int32_t> other = window_tokens(58, 5000);
  ASSERT_TRUE(m.can_allocate(other, 58));
  m.allocate(1, other, 58);  // 15 blocks per group: 24 free + 6 evicted
  EXPECT_EQ(m.prefix_stats().evictions, 6);
  m.free(1);
  // The 32-token prefix's query at 32 reads from 25: windowed blocks 6, 7 only.
  EXPECT_EQ(m.cached_prefix(tokens), 32);
  // A 16-token prefix would need windowed blocks 2, 3: evicted, and so are
  // the ones every shorter reuse needs.
  const std::vector<int32_t> shorter(tokens.begin(), tokens.begin() + 17);
  EXPECT_EQ(m.cached_prefix(shorter), 0);

  // Reuse takes the cached blocks and only the window's.
  ASSERT_TRUE(m.can_allocate(tokens, 33));
  EXPECT_EQ(m.allocate(2, tokens, 33), 32);
  EXPECT_EQ(held_blocks(m, 2, 0), 9);
  EXPECT_EQ(held_blocks(m, 2, 1), 3);  // blocks 6, 7 reused, 8 fresh
  const auto w = m.block_table(2, 1);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(w[size_t(i)], kNo);
  m.free(2);
  EXPECT_EQ(m.n_free_blocks(), 40);
}

TEST(BlockManagerWindowTest, AllWindowedModelReusesOnlyAnIntactChain) {
  // Mistral-style: one windowed group is the primary chain; a prefix is
  // reused only while its whole chain is cached.
  BlockManager m(12, 4, true, {8});
  const std::vector<int32_t> tokens = window_tokens(25);
  m.allocate(0, tokens, 25);
  m.mark_computed(0, tokens, 25);
  EXPECT_EQ(m.seq_blocks(0), 3);  // reads from 18: blocks 4, 5, 6
  m.free(0);
  EXPECT_EQ(m.cached_prefix(tokens), 24);
  ASSERT_TRUE(m.can_allocate(tokens, 25));
  EXPECT_EQ(m.allocate(1, tokens, 25), 24);
  EXPECT_EQ(m.seq_blocks(1), 3);  // blocks 4, 5 reused, 6 fresh
  m.free(1);
  // Take every never-cached block and one more: block 0 of the chain (released first) goes.
  const std::vector<int32_t> other = window_tokens(28, 7000);
  m.allocate(2, other, 28);
  EXPECT_EQ(m.prefix_stats().evictions, 1);
  EXPECT_EQ(m.cached_prefix(tokens), 0);
  m.free(2);
  EXPECT_EQ(m.n_free_blocks(), 12);
}

TEST(BlockManagerWindowTest, AllGroupsOfAHitHoldTheSameTokens) {
  // Two prompts sharing 8 tokens then diverging: the windowed group's
  // entries are anchored on group 0's, so only the shared blocks match.
  BlockManager m(64, 4, true, {0, 8});
  std::vector<int32_t> a = window_tokens(21);
  std::vector<int32_t> b = a;
  for (size_t i = 8; i < b.size(); ++i) b[i] += 1000;
  m.allocate(0, a, 21);
  m.mark_computed(0, a, 21);
  m.free(0);
  EXPECT_EQ(m.cached_prefix(a), 20);
  EXPECT_EQ(m.cached_prefix(b), 8);
  EXPECT_EQ(m.allocate(1, b, 21), 8);
  // Group 1 took a's blocks 0, 1 (query at 8 reads from 1), not 2..4.
  EXPECT_EQ(held_blocks(m, 1, 1), 6);
  m.free(1);
}

}  // namespace
}  // namespace kvforge
