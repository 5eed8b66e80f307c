// The prefix cache: PrefixCache's verified lookups (including a hash function
// that makes every key collide) and LRU list, then the cache as BlockManager
// uses it: hits, misses, eviction order, counters.
#include "engine/kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/kv/block_manager.h"

namespace kvforge {
namespace {

uint64_t constant_hash(uint64_t, std::span<const int32_t>) { return 7; }

std::vector<int32_t> tokens_from(int n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = first + i;
  return t;
}

TEST(PrefixCacheTest, ChainHashDependsOnParentAndEveryToken) {
  const std::vector<int32_t> a = {1, 2, 3, 4};
  const std::vector<int32_t> b = {1, 2, 3, 5};
  const std::vector<int32_t> c = {2, 1, 3, 4};
  const uint64_t ha = PrefixCache::chain_hash(PrefixCache::kRootHash, a);
  EXPECT_EQ(ha, PrefixCache::chain_hash(PrefixCache::kRootHash, a));
  EXPECT_NE(ha, PrefixCache::chain_hash(PrefixCache::kRootHash, b));
  EXPECT_NE(ha, PrefixCache::chain_hash(PrefixCache::kRootHash, c));
  EXPECT_NE(ha, PrefixCache::chain_hash(ha, a));
}

TEST(PrefixCacheTest, FindsAChainAndStopsAtTheFirstMismatch) {
  PrefixCache cache(8, 2);
  const std::vector<int32_t> t = {10, 11, 12, 13, 14, 15};
  const PrefixEntryRef e0 = cache.insert(3, nullptr, std::span(t).subspan(0, 2));
  const PrefixEntryRef e1 = cache.insert(5, &e0, std::span(t).subspan(2, 2));
  cache.insert(1, &e1, std::span(t).subspan(4, 2));
  auto chain = cache.match(t, 3);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].block, 3);
  EXPECT_EQ(chain[1].block, 5);
  EXPECT_EQ(chain[2].block, 1);
  EXPECT_EQ(cache.match(t, 2).size(), 2u);  // max_blocks caps the walk
  std::vector<int32_t> u = t;
  u[3] = 99;  // second block differs
  EXPECT_EQ(cache.match(u, 3).size(), 1u);
  // The same second-block tokens after a different first block: no hit.
  std::vector<int32_t> w = t;
  w[0] = 98;
  EXPECT_TRUE(cache.match(w, 3).empty());
  EXPECT_EQ(cache.n_entries(), 3);
}

TEST(PrefixCacheTest, VerificationServesOnlyTheRightEntryWhenEveryHashCollides) {
  PrefixCache cache(16, 2, &constant_hash);
  const std::vector<int32_t> p = {1, 2, 3, 4};
  const std::vector<int32_t> q = {1, 2, 5, 6};
  const std::vector<int32_t> r = {7, 8, 3, 4};  // second block equals p's, first differs
  const PrefixEntryRef p0 = cache.insert(0, nullptr, std::span(p).subspan(0, 2));
  const PrefixEntryRef p1 = cache.insert(1, &p0, std::span(p).subspan(2, 2));
  const PrefixEntryRef q1 = cache.insert(2, &p0, std::span(q).subspan(2, 2));
  const PrefixEntryRef r0 = cache.insert(3, nullptr, std::span(r).subspan(0, 2));
  const PrefixEntryRef r1 = cache.insert(4, &r0, std::span(r).subspan(2, 2));
  EXPECT_EQ(p0.hash, r1.hash);  // the hash tells nothing apart
  auto chain = cache.match(p, 2);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[1].block, p1.block);
  chain = cache.match(q, 2);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[1].block, q1.block);
  chain = cache.match(r, 2);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].block, r0.block);
  EXPECT_EQ(chain[1].block, r1.block);
  // Tokens seen nowhere, or a known block under the wrong parent: no hit.
  EXPECT_TRUE(cache.match(std::vector<int32_t>{3, 4, 1, 2}, 2).empty());
  EXPECT_EQ(cache.find(&r0, std::span(q).subspan(2, 2)), nullptr);
}

TEST(PrefixCacheTest, AChildOfAnEvictedParentNeverMatchesAgain) {
  PrefixCache cache(8, 2, &constant_hash);
  const std::vector<int32_t> t = {1, 2, 3, 4};
  const PrefixEntryRef a0 = cache.insert(0, nullptr, std::span(t).subspan(0, 2));
  const PrefixEntryRef a1 = cache.insert(1, &a0, std::span(t).subspan(2, 2));
  EXPECT_TRUE(cache.is_live(a1));
  cache.erase(0);  // block 0 reused for other content ...
  EXPECT_FALSE(cache.is_live(a0));
  EXPECT_TRUE(cache.match(t, 2).empty());
  // ... and even when the same tokens are cached again in the same block,
  // the old child names the old registration: it stays unreachable.
  const PrefixEntryRef b0 = cache.insert(0, nullptr, std::span(t).subspan(0, 2));
  EXPECT_NE(b0.serial, a0.serial);
  EXPECT_EQ(cache.match(t, 2).size(), 1u);
  EXPECT_EQ(cache.find(&a0, std::span(t).subspan(2, 2)), nullptr);  // stale parent
  EXPECT_THROW(cache.insert(2, &a0, std::span(t).subspan(2, 2)), std::logic_error);
}

TEST(PrefixCacheTest, InsertRejectsMisuse) {
  PrefixCache cache(4, 2);
  const std::vector<int32_t> t = {1, 2, 3};
  cache.insert(0, nullptr, std::span(t).subspan(0, 2));
  EXPECT_THROW(cache.insert(0, nullptr, std::span(t).subspan(0, 2)), std::logic_error);
  EXPECT_THROW(cache.insert(1, nullptr, t), std::invalid_argument);  // 3 ids for a block of 2
  EXPECT_THROW(cache.insert(4, nullptr, std::span(t).subspan(0, 2)), std::out_of_range);
  EXPECT_THROW(cache.push_evictable(1), std::logic_error);  // no entry
}

TEST(PrefixCacheTest, LruHandsOutTheOldestReleaseFirst) {
  PrefixCache cache(8, 1);
  for (int32_t b = 0; b < 5; ++b) cache.insert(b, nullptr, std::vector<int32_t>{b});
  EXPECT_EQ(cache.oldest_evictable(), -1);
  for (BlockId b : {3, 1, 4, 0}) cache.push_evictable(b);
  EXPECT_EQ(cache.n_evictable(), 4);
  EXPECT_EQ(cache.oldest_evictable(), 3);
  cache.remove_evictable(3);  // taken back into use by a hit
  EXPECT_EQ(cache.oldest_evictable(), 1);
  cache.remove_evictable(4);  // from the middle
  cache.push_evictable(3);    // released again: now the newest
  std::vector<BlockId> order;
  while (cache.oldest_evictable() >= 0) {
    const BlockId b = cache.oldest_evictable();
    order.push_back(b);
    cache.erase(b);  // eviction unlinks it
  }
  EXPECT_EQ(order, (std::vector<BlockId>{1, 0, 3}));
  EXPECT_EQ(cache.n_evictable(), 0);
  EXPECT_EQ(cache.n_entries(), 2);  // blocks 2 and 4 are still cached (in use)
  EXPECT_THROW(cache.remove_evictable(2), std::logic_error);
  cache.push_evictable(4);
  EXPECT_THROW(cache.push_evictable(4), std::logic_error);  // already evictable
}

// --- through BlockManager -----------------------------------------------------------

// Admits `tokens` as `seq`, "computes" them and registers the full blocks.
int32_t admit(BlockManager& m, SeqId seq, const std::vector<int32_t>& tokens) {
  const int32_t reused = m.allocate(seq, tokens, int32_t(tokens.size()));
  m.mark_computed(seq, tokens, int32_t(tokens.size()));
  return reused;
}

TEST(PrefixCacheManagerTest, SecondRequestReusesFullBlocksAndCountsThem) {
  BlockManager m(16, 4, true);
  const auto prompt = tokens_from(14, 1);  // 3 full blocks + 2
  EXPECT_EQ(m.cached_prefix(prompt), 0);
  EXPECT_EQ(admit(m, 0, prompt), 0);
  EXPECT_EQ(m.prefix_stats().misses, 3);
  EXPECT_EQ(m.prefix_stats().hits, 0);
  EXPECT_EQ(m.cached_prefix(prompt), 12);
  // A hit on blocks another sequence holds shares them.
  EXPECT_EQ(admit(m, 1, prompt), 12);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(m.block_table(1)[size_t(i)], m.block_table(0)[size_t(i)]);
    EXPECT_EQ(m.refcount(m.block_table(0)[size_t(i)]), 2);
  }
  EXPECT_NE(m.block_table(1)[3], m.block_table(0)[3]);  // the partial block is private
  EXPECT_EQ(m.prefix_stats().hits, 3);
  EXPECT_EQ(m.prefix_stats().misses, 3);
  EXPECT_EQ(m.prefix_stats().tokens_reused, 12);
  EXPECT_EQ(m.n_free_blocks(), 16 - 5);
  m.free(0);
  m.free(1);
  EXPECT_EQ(m.n_free_blocks(), 16);  // cached blocks count as free
  // A hit on blocks nobody holds takes them back out of the free pool.
  const auto longer = tokens_from(20, 1);
  EXPECT_EQ(m.cached_prefix(longer), 12);
  EXPECT_TRUE(m.can_allocate(longer, 20));
  EXPECT_EQ(m.allocate(2, longer, 20), 12);
  EXPECT_EQ(m.n_free_blocks(), 16 - 5);
  EXPECT_EQ(m.prefix_stats().hits, 6);
  EXPECT_EQ(m.prefix_stats().misses, 4);  // the 4th full block of `longer`
  EXPECT_EQ(m.prefix_stats().evictions, 0);
}

TEST(PrefixCacheManagerTest, CachedPrefixLeavesAtLeastOneTokenToCompute) {
  BlockManager m(8, 4, true);
  const auto prompt = tokens_from(8, 1);  // exactly two blocks
  admit(m, 0, prompt);
  EXPECT_EQ(m.cached_prefix(prompt), 4);  // not 8: the last token's logits are needed
  EXPECT_EQ(m.allocate(1, prompt, 8), 4);
  const auto nine = tokens_from(9, 1);
  EXPECT_EQ(m.cached_prefix(nine), 8);
  // A first chunk shorter than the cached prefix reuses only whole blocks inside it.
  EXPECT_EQ(m.allocate(2, nine, 6), 4);
  EXPECT_EQ(m.seq_tokens(2), 6);
  EXPECT_EQ(m.block_table(2)[0], m.block_table(0)[0]);
  EXPECT_NE(m.block_table(2)[1], m.block_table(0)[1]);
}

TEST(PrefixCacheManagerTest, OnlyComputedFullBlocksAreCached) {
  BlockManager m(8, 4, true);
  const auto prompt = tokens_from(11, 1);
  m.allocate(0, prompt, 11);
  m.mark_computed(0, prompt, 7);  // first chunk: one full block
  EXPECT_EQ(m.cached_prefix(prompt), 4);
  m.mark_computed(0, prompt, 11);
  EXPECT_EQ(m.cached_prefix(prompt), 8);
  EXPECT_THROW(m.mark_computed(0, prompt, 12), std::invalid_argument);
}

TEST(PrefixCacheManagerTest, EvictsLeastRecentlyReleasedAndTailBlocksFirst) {
  BlockManager m(8, 2, true);
  const auto a = tokens_from(5, 100);  // 2 full blocks + 1
  const auto b = tokens_from(5, 200);
  admit(m, 0, a);
  admit(m, 1, b);
  m.free(0);  // a's blocks released first: oldest
  m.free(1);
  EXPECT_EQ(m.n_free_blocks(), 8);
  EXPECT_EQ(m.cached_prefix(a), 4);
  EXPECT_EQ(m.cached_prefix(b), 4);
  // The 4 never-cached free blocks go first, then one eviction: a's tail,
  // since a was released first and a prefix's tail before its head.
  m.allocate(2, tokens_from(10, 300), 10);
  EXPECT_EQ(m.prefix_stats().evictions, 1);
  EXPECT_EQ(m.cached_prefix(a), 2);
  EXPECT_EQ(m.cached_prefix(b), 4);
  m.free(2);  // never marked computed: plain free blocks again
  // A hit on a's head takes it out of the LRU; released again, it is the newest.
  EXPECT_EQ(m.allocate(3, a, 5), 2);
  m.free(3);
  m.allocate(4, tokens_from(12, 400), 12);  // 6 blocks: 5 plain + 1 eviction
  EXPECT_EQ(m.prefix_stats().evictions, 2);
  EXPECT_EQ(m.cached_prefix(b), 2);  // b's tail went, not a's recently used head
  EXPECT_EQ(m.cached_prefix(a), 2);
  m.append(4, 2);
  EXPECT_EQ(m.prefix_stats().evictions, 3);
  EXPECT_EQ(m.cached_prefix(b), 0);
  EXPECT_EQ(m.cached_prefix(a), 2);
  m.append(4, 2);
  EXPECT_EQ(m.prefix_stats().evictions, 4);
  EXPECT_EQ(m.cached_prefix(a), 0);
  EXPECT_EQ(m.n_free_blocks(), 0);
  EXPECT_FALSE(m.can_append(4, 1));
}

TEST(PrefixCacheManagerTest, ConcurrentDuplicatesKeepOneEntryAndTheChainGrows) {
  BlockManager m(16, 2, true);
  const auto prompt = tokens_from(7, 1);
  // Both computed the same prompt before either registered it.
  m.allocate(0, prompt, 7);
  m.allocate(1, prompt, 7);
  m.mark_computed(0, prompt, 7);
  m.mark_computed(1, prompt, 7);
  // Seq 1 keeps growing; its next full block chains under seq 0's entries.
  auto longer = prompt;
  longer.push_back(8);
  longer.push_back(9);
  m.append(1, 2);
  m.mark_computed(1, longer, 9);
  m.free(1);
  auto query = longer;
  query.push_back(10);
  EXPECT_EQ(m.cached_prefix(query), 8);
  EXPECT_EQ(m.allocate(2, query, 10), 8);
  // Seq 0's blocks serve the first three, seq 1's own block the fourth.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m.block_table(2)[size_t(i)], m.block_table(0)[size_t(i)]);
  m.free(0);
  m.free(2);
  EXPECT_EQ(m.n_free_blocks(), 16);
}

TEST(PrefixCacheManagerTest, ForkedSequencesShareRegistrations) {
  BlockManager m(16, 2, true);
  const auto prompt = tokens_from(5, 1);
  m.allocate(0, prompt, 5);
  m.fork(0, 1);  // before marking: the child learns the entries from the parent's blocks
  m.mark_computed(0, prompt, 5);
  m.mark_computed(1, prompt, 5);
  EXPECT_EQ(m.cached_prefix(prompt), 4);
  auto child_tokens = prompt;
  child_tokens.push_back(42);
  m.append(1, 1);  // copies the shared partial block
  ASSERT_EQ(m.take_pending_copies().size(), 1u);
  m.mark_computed(1, child_tokens, 6);
  child_tokens.push_back(43);
  EXPECT_EQ(m.cached_prefix(child_tokens), 6);
}

TEST(PrefixCacheManagerTest, DisabledCacheNeverHits) {
  BlockManager m(8, 2, false);
  const auto prompt = tokens_from(7, 1);
  admit(m, 0, prompt);
  m.free(0);
  EXPECT_EQ(m.cached_prefix(prompt), 0);
  EXPECT_EQ(admit(m, 1, prompt), 0);
  EXPECT_EQ(m.prefix_stats().hits, 0);
  EXPECT_EQ(m.prefix_stats().misses, 0);
  EXPECT_EQ(m.prefix_stats().tokens_reused, 0);
}

}  // namespace
}  // namespace kvforge
