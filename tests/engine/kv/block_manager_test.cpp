// BlockManager: unit tests of each operation, then a randomized stress test
// against a shadow store that plays the K/V tensors.
//
// The shadow store keeps, for every block slot, the "K/V" written there: a
// hash of the whole token prefix up to that position, which is what real K/V
// depends on. The test writes only through the block tables, applies the
// manager's pending copies exactly as the paged store would, and after every
// operation checks that each sequence reads back the prefix hashes of its
// own tokens. A missed copy-on-write, a block handed to two owners, a wrong
// prefix-cache hit or a leaked block all show up as a wrong value or a
// refcount/free-count mismatch.
#include "engine/kv/block_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvforge {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = first + i;
  return t;
}

std::vector<BlockId> table_of(const BlockManager& m, SeqId seq) {
  const auto t = m.block_table(seq);
  return {t.begin(), t.end()};
}

// Everything a caller can observe, to prove a refused action changed nothing.
struct Snapshot {
  int32_t n_free;
  std::vector<int32_t> refcounts;
  std::map<SeqId, std::pair<int32_t, std::vector<BlockId>>> seqs;
  int64_t hits, misses, evictions, reused;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const BlockManager& m, const std::vector<SeqId>& ids) {
  Snapshot s{m.n_free_blocks(), {}, {}, 0, 0, 0, 0};
  for (BlockId b = 0; b < m.n_blocks(); ++b) s.refcounts.push_back(m.refcount(b));
  for (SeqId id : ids)
    if (m.has_seq(id)) s.seqs[id] = {m.seq_tokens(id), table_of(m, id)};
  const PrefixCacheStats& st = m.prefix_stats();
  s.hits = st.hits;
  s.misses = st.misses;
  s.evictions = st.evictions;
  s.reused = st.tokens_reused;
  return s;
}

TEST(BlockManagerTest, RejectsBadConstructionArguments) {
  EXPECT_THROW(BlockManager(8, 3, false), std::invalid_argument);
  EXPECT_THROW(BlockManager(8, 0, false), std::invalid_argument);
  EXPECT_THROW(BlockManager(8, 512, false), std::invalid_argument);
  EXPECT_THROW(BlockManager(0, 16, false), std::invalid_argument);
  for (int32_t bs = 1; bs <= 256; bs *= 2) EXPECT_NO_THROW(BlockManager(4, bs, true));
}

TEST(BlockManagerTest, BlocksForRoundsUp) {
  BlockManager m(4, 16, false);
  EXPECT_EQ(m.blocks_for(0), 0);
  EXPECT_EQ(m.blocks_for(1), 1);
  EXPECT_EQ(m.blocks_for(16), 1);
  EXPECT_EQ(m.blocks_for(17), 2);
  EXPECT_EQ(m.blocks_for(64), 4);
}

TEST(BlockManagerTest, AllocateAppendFreeReturnsEveryBlock) {
  BlockManager m(6, 4, false);
  const auto tokens = iota_tokens(10);
  ASSERT_TRUE(m.can_allocate(tokens, 10));
  EXPECT_EQ(m.allocate(7, tokens, 10), 0);
  EXPECT_EQ(m.seq_tokens(7), 10);
  EXPECT_EQ(m.block_table(7).size(), 3u);
  EXPECT_EQ(m.n_free_blocks(), 3);
  // 10 → 12 fits the third block; 12 → 13 needs a fourth.
  ASSERT_TRUE(m.can_append(7, 2));
  m.append(7, 2);
  EXPECT_EQ(m.n_free_blocks(), 3);
  m.append(7, 1);
  EXPECT_EQ(m.n_free_blocks(), 2);
  EXPECT_EQ(m.block_table(7).size(), 4u);
  EXPECT_TRUE(m.can_append(7, 11));   // 24 positions = 6 blocks
  EXPECT_FALSE(m.can_append(7, 12));  // 25 would need a seventh
  for (BlockId b : m.block_table(7)) EXPECT_EQ(m.refcount(b), 1);
  std::set<BlockId> distinct(m.block_table(7).begin(), m.block_table(7).end());
  EXPECT_EQ(distinct.size(), 4u);
  m.free(7);
  EXPECT_FALSE(m.has_seq(7));
  EXPECT_EQ(m.n_free_blocks(), 6);
  for (BlockId b = 0; b < 6; ++b) EXPECT_EQ(m.refcount(b), 0);
  EXPECT_TRUE(m.take_pending_copies().empty());
}

TEST(BlockManagerTest, ChunkedAllocateTakesOnlyTheChunk) {
  BlockManager m(8, 4, false);
  const auto prompt = iota_tokens(20);
  EXPECT_EQ(m.allocate(1, prompt, 6), 0);
  EXPECT_EQ(m.seq_tokens(1), 6);
  EXPECT_EQ(m.n_free_blocks(), 6);
  m.append(1, 14);
  EXPECT_EQ(m.n_free_blocks(), 3);
  EXPECT_EQ(m.allocate(2, prompt, 0), 0);  // an empty sequence holds no block
  EXPECT_TRUE(m.block_table(2).empty());
  m.append(2, 1);
  EXPECT_EQ(m.block_table(2).size(), 1u);
}

TEST(BlockManagerTest, RefusedActionsThrowAndChangeNothing) {
  BlockManager m(4, 4, true);
  const auto tokens = iota_tokens(12);
  m.allocate(1, tokens, 12);
  const std::vector<SeqId> ids = {1, 2, 3};
  const Snapshot before = snapshot(m, ids);

  EXPECT_FALSE(m.can_allocate(tokens, 8));
  EXPECT_THROW(m.allocate(2, tokens, 8), std::logic_error);
  EXPECT_FALSE(m.can_append(1, 5));
  EXPECT_THROW(m.append(1, 5), std::logic_error);
  EXPECT_THROW(m.allocate(1, tokens, 1), std::invalid_argument);   // exists
  EXPECT_THROW(m.allocate(2, tokens, 13), std::invalid_argument);  // more than the ids given
  EXPECT_THROW(m.allocate(2, tokens, -1), std::invalid_argument);
  EXPECT_THROW(m.append(3, 1), std::invalid_argument);  // unknown
  EXPECT_THROW(m.can_append(1, -1), std::invalid_argument);
  EXPECT_THROW(m.fork(3, 4), std::invalid_argument);  // unknown parent
  EXPECT_THROW(m.fork(1, 1), std::invalid_argument);  // child exists
  EXPECT_THROW(m.free(3), std::invalid_argument);
  EXPECT_THROW(m.block_table(3), std::invalid_argument);
  EXPECT_THROW(m.mark_computed(1, tokens, 13), std::invalid_argument);
  EXPECT_THROW(m.refcount(4), std::out_of_range);
  EXPECT_EQ(snapshot(m, ids), before);
}

TEST(BlockManagerTest, ErrorMessagesNameTheSequenceAndTheShortfall) {
  BlockManager m(2, 4, false);
  const auto tokens = iota_tokens(8);
  m.allocate(5, tokens, 8);
  try {
    m.append(5, 1);
    FAIL() << "append beyond the pool succeeded";
  } catch (const std::logic_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sequence 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs 1 blocks, 0 free"), std::string::npos) << msg;
  }
  try {
    m.free(42);
    FAIL() << "freeing an unknown sequence succeeded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 42 does not exist"), std::string::npos);
  }
}

TEST(BlockManagerTest, ForkSharesBlocksAndCopiesOnlyThePartialLastBlock) {
  BlockManager m(8, 4, false);
  const auto tokens = iota_tokens(6);
  m.allocate(0, tokens, 6);  // blocks: full, partial (2 of 4)
  const std::vector<BlockId> parent = table_of(m, 0);
  m.fork(0, 1);
  EXPECT_EQ(table_of(m, 1), parent);
  EXPECT_EQ(m.seq_tokens(1), 6);
  for (BlockId b : parent) EXPECT_EQ(m.refcount(b), 2);
  EXPECT_EQ(m.n_free_blocks(), 6);  // forking takes no block

  // The copy is counted by the question.
  BlockManager tight(3, 4, false);
  tight.allocate(0, tokens, 6);
  tight.fork(0, 1);
  EXPECT_TRUE(tight.can_append(1, 2));   // copy of the partial block only
  EXPECT_FALSE(tight.can_append(1, 3));  // copy + a new block

  m.append(1, 1);
  const std::vector<BlockId> child = table_of(m, 1);
  ASSERT_EQ(child.size(), 2u);
  EXPECT_EQ(child[0], parent[0]);  // full block stays shared
  EXPECT_NE(child[1], parent[1]);  // partial block was copied
  EXPECT_EQ(m.refcount(parent[0]), 2);
  EXPECT_EQ(m.refcount(parent[1]), 1);
  EXPECT_EQ(m.refcount(child[1]), 1);
  const auto copies = m.take_pending_copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, parent[1]);
  EXPECT_EQ(copies[0].dst, child[1]);
  EXPECT_TRUE(m.take_pending_copies().empty());  // taken means cleared

  m.append(0, 1);  // the parent now owns its partial block alone: no copy
  EXPECT_EQ(table_of(m, 0), parent);
  EXPECT_TRUE(m.take_pending_copies().empty());

  m.free(0);
  m.free(1);
  EXPECT_EQ(m.n_free_blocks(), 8);
}

TEST(BlockManagerTest, ForkAtABlockBoundaryNeedsNoCopy) {
  BlockManager m(8, 4, false);
  const auto tokens = iota_tokens(8);
  m.allocate(0, tokens, 8);
  m.fork(0, 1);
  m.append(1, 1);
  m.append(0, 1);
  EXPECT_TRUE(m.take_pending_copies().empty());
  EXPECT_NE(m.block_table(0)[2], m.block_table(1)[2]);
  EXPECT_EQ(m.refcount(m.block_table(0)[1]), 2);
}

TEST(BlockManagerTest, CopyIntoAFreedSequenceIsDropped) {
  BlockManager m(8, 4, false);
  const auto tokens = iota_tokens(6);
  m.allocate(0, tokens, 6);
  m.fork(0, 1);
  m.append(1, 1);
  m.free(1);  // its private copy is released before the copy ran
  EXPECT_TRUE(m.take_pending_copies().empty());
  m.free(0);
  EXPECT_EQ(m.n_free_blocks(), 8);
}

TEST(BlockManagerTest, AppendZeroIsANoOpEvenOnASharedPartialBlock) {
  BlockManager m(4, 4, false);
  const auto tokens = iota_tokens(2);
  m.allocate(0, tokens, 2);
  m.fork(0, 1);
  EXPECT_TRUE(m.can_append(1, 0));
  m.append(1, 0);
  EXPECT_TRUE(m.take_pending_copies().empty());
  EXPECT_EQ(table_of(m, 0), table_of(m, 1));
}

// --- randomized stress against a shadow store ------------------------------------

uint64_t extend_hash(uint64_t h, int32_t token) {
  h ^= uint64_t(uint32_t(token)) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

struct ShadowSeq {
  std::vector<int32_t> tokens;   // ids this sequence will hold (a prompt may run ahead)
  std::vector<uint64_t> prefix;  // [tokens] hash of tokens[0..p], the "K/V" at position p
  int32_t computed = 0;          // positions whose K/V has been written
};

class Stress {
 public:
  Stress(int32_t n_blocks, int32_t block_size, bool prefix_cache, uint32_t seed)
      : m_(n_blocks, block_size, prefix_cache),
        bs_(block_size),
        rng_(seed),
        slots_(size_t(n_blocks), std::vector<uint64_t>(size_t(block_size), kUnwritten)) {
    // A few shared prompt stems so that prefix hits happen.
    std::uniform_int_distribution<int> len(1, 3 * block_size + 2);
    for (int i = 0; i < 3; ++i) stems_.push_back(random_tokens(len(rng_)));
  }

  void run(int n_ops) {
    for (int op = 0; op < n_ops; ++op) {
      step(op);
      check_invariants(op);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (auto& [id, s] : seqs_) m_.free(id);
    seqs_.clear();
    EXPECT_EQ(m_.n_free_blocks(), m_.n_blocks()) << "blocks leaked";
    for (BlockId b = 0; b < m_.n_blocks(); ++b) EXPECT_EQ(m_.refcount(b), 0) << "block " << b;
  }

  int64_t successes = 0, refusals = 0, copies = 0;
  const BlockManager& manager() const { return m_; }

 private:
  static constexpr uint64_t kUnwritten = ~0ull;

  std::vector<int32_t> random_tokens(int n) {
    std::uniform_int_distribution<int32_t> tok(0, 3);  // tiny alphabet: many repeats
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = tok(rng_);
    return t;
  }

  static void set_tokens(ShadowSeq& s, std::vector<int32_t> tokens) {
    s.tokens = std::move(tokens);
    s.prefix.resize(s.tokens.size());
    uint64_t h = 0;
    for (size_t i = 0; i < s.tokens.size(); ++i) s.prefix[i] = h = extend_hash(h, s.tokens[i]);
  }

  void apply_copies(const std::vector<BlockCopy>& list) {
    for (const BlockCopy& c : list) slots_[size_t(c.dst)] = slots_[size_t(c.src)];
  }

  // Writes K/V for positions [computed, reserved) as the forward pass would.
  void compute(SeqId id, ShadowSeq& s, bool mark) {
    apply_copies(m_.take_pending_copies());
    const auto table = m_.block_table(id);
    for (int32_t p = s.computed; p < m_.seq_tokens(id); ++p) {
      const BlockId b = table[size_t(p / bs_)];
      ASSERT_EQ(m_.refcount(b), 1)
          << "seq " << id << " writes position " << p << " into shared block " << b;
      slots_[size_t(b)][size_t(p % bs_)] = s.prefix[size_t(p)];
    }
    s.computed = m_.seq_tokens(id);
    if (mark) m_.mark_computed(id, s.tokens, s.computed);
  }

  SeqId random_live() {
    auto it = seqs_.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, seqs_.size() - 1)(rng_));
    return it->first;
  }

  void step(int op) {
    const int kind = std::uniform_int_distribution<int>(0, 9)(rng_);
    const bool mark = std::uniform_int_distribution<int>(0, 4)(rng_) != 0;
    if (seqs_.empty() || kind <= 2) {
      admit(mark);
    } else if (kind <= 5) {
      grow(random_live(), mark);
    } else if (kind == 6) {
      const SeqId parent = random_live();
      const SeqId child = next_id_++;
      const Snapshot before = snapshot(m_, {parent});
      m_.fork(parent, child);
      seqs_[child] = seqs_[parent];
      for (BlockId b : m_.block_table(parent))
        ASSERT_EQ(m_.refcount(b), before.refcounts[size_t(b)] + 1) << "op " << op;
      ++successes;
    } else if (kind == 7) {
      // Preempt by recompute: free, then re-admit with what was computed.
      const SeqId id = random_live();
      ShadowSeq s = seqs_[id];
      m_.free(id);
      seqs_.erase(id);
      std::vector<int32_t> t(s.tokens.begin(), s.tokens.begin() + std::max(1, s.computed));
      admit_tokens(std::move(t), mark);
    } else {
      const SeqId id = random_live();
      m_.free(id);
      seqs_.erase(id);
      ++successes;
    }
  }

  void admit(bool mark) {
    std::vector<int32_t> t = stems_[std::uniform_int_distribution<size_t>(0, 2)(rng_)];
    const auto tail = random_tokens(std::uniform_int_distribution<int>(0, 2 * bs_ + 1)(rng_));
    t.insert(t.end(), tail.begin(), tail.end());
    admit_tokens(std::move(t), mark);
  }

  void admit_tokens(std::vector<int32_t> t, bool mark) {
    const int32_t n = std::uniform_int_distribution<int32_t>(1, int32_t(t.size()))(rng_);
    const std::vector<SeqId> ids = live_ids();
    const Snapshot before = snapshot(m_, ids);
    const int32_t cached = m_.cached_prefix(t);
    ASSERT_LT(cached, int32_t(t.size()));
    ASSERT_EQ(cached % bs_, 0);
    const bool can = m_.can_allocate(t, n);
    const SeqId id = next_id_++;
    int32_t reused = 0;
    try {
      reused = m_.allocate(id, t, n);
    } catch (const std::logic_error&) {
      ASSERT_FALSE(can) << "can_allocate said yes, allocate refused";
      ASSERT_EQ(snapshot(m_, ids), before) << "a refused allocate changed the manager";
      ++refusals;
      return;
    }
    ASSERT_TRUE(can) << "can_allocate said no, allocate succeeded";
    ++successes;
    ASSERT_LE(reused, n);
    ASSERT_EQ(reused, std::min(cached, n / bs_ * bs_));
    ASSERT_EQ(m_.prefix_stats().tokens_reused - before.reused, reused);
    ShadowSeq& s = seqs_[id];
    set_tokens(s, std::move(t));
    s.computed = reused;  // the cache's K/V must already be right: checked below
    compute(id, s, mark);
  }

  void grow(SeqId id, bool mark) {
    ShadowSeq& s = seqs_[id];
    const int32_t n = std::uniform_int_distribution<int32_t>(0, 2 * bs_ + 1)(rng_);
    const int32_t len = m_.seq_tokens(id);
    const std::vector<SeqId> ids = live_ids();
    const Snapshot before = snapshot(m_, ids);
    const std::vector<BlockId> old_table = table_of(m_, id);
    const bool shared_partial = n > 0 && len % bs_ != 0 && m_.refcount(old_table.back()) > 1;
    const bool can = m_.can_append(id, n);
    try {
      m_.append(id, n);
    } catch (const std::logic_error&) {
      ASSERT_FALSE(can) << "can_append said yes, append refused";
      ASSERT_EQ(snapshot(m_, ids), before) << "a refused append changed the manager";
      ++refusals;
      return;
    }
    ASSERT_TRUE(can) << "can_append said no, append succeeded";
    ++successes;
    const auto list = m_.take_pending_copies();
    const std::vector<BlockId> table = table_of(m_, id);
    if (shared_partial) {
      ASSERT_EQ(list.size(), 1u) << "shared partial block not copied";
      EXPECT_EQ(list[0].src, old_table.back());
      EXPECT_EQ(list[0].dst, table[old_table.size() - 1]);
      ++copies;
    } else {
      ASSERT_TRUE(list.empty()) << "copy without a shared partial block";
      ASSERT_TRUE(std::equal(old_table.begin(), old_table.end(), table.begin()));
    }
    apply_copies(list);
    if (size_t(len + n) > s.tokens.size()) {
      std::vector<int32_t> t = s.tokens;
      const auto more = random_tokens(int(size_t(len + n) - t.size()));
      t.insert(t.end(), more.begin(), more.end());
      set_tokens(s, std::move(t));
    }
    compute(id, s, mark);
  }

  std::vector<SeqId> live_ids() const {
    std::vector<SeqId> ids;
    for (const auto& [id, s] : seqs_) ids.push_back(id);
    return ids;
  }

  void check_invariants(int op) {
    std::vector<int32_t> owners(size_t(m_.n_blocks()), 0);
    for (const auto& [id, s] : seqs_) {
      const auto table = m_.block_table(id);
      ASSERT_EQ(int32_t(table.size()), m_.blocks_for(m_.seq_tokens(id))) << "op " << op;
      std::set<BlockId> distinct(table.begin(), table.end());
      ASSERT_EQ(distinct.size(), table.size()) << "seq " << id << " holds a block twice";
      for (BlockId b : table) ++owners[size_t(b)];
      for (int32_t p = 0; p < s.computed; ++p)
        ASSERT_EQ(slots_[size_t(table[size_t(p / bs_)])][size_t(p % bs_)], s.prefix[size_t(p)])
            << "op " << op << ": seq " << id << " reads wrong K/V at position " << p;
    }
    int32_t unowned = 0;
    for (BlockId b = 0; b < m_.n_blocks(); ++b) {
      ASSERT_GE(m_.refcount(b), 0);
      ASSERT_EQ(m_.refcount(b), owners[size_t(b)]) << "op " << op << ": block " << b;
      unowned += owners[size_t(b)] == 0 ? 1 : 0;
    }
    ASSERT_EQ(m_.n_free_blocks(), unowned) << "op " << op;
  }

  BlockManager m_;
  int32_t bs_;
  std::mt19937 rng_;
  std::vector<std::vector<uint64_t>> slots_;  // [n_blocks][block_size] shadow K/V
  std::vector<std::vector<int32_t>> stems_;
  std::map<SeqId, ShadowSeq> seqs_;
  SeqId next_id_ = 0;
};

struct StressCase {
  int32_t n_blocks, block_size;
  bool prefix_cache;
};

class BlockManagerStressTest : public ::testing::TestWithParam<StressCase> {};

TEST_P(BlockManagerStressTest, RandomOpsKeepRefcountsContentAndFreeCountRight) {
  const StressCase c = GetParam();
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Stress stress(c.n_blocks, c.block_size, c.prefix_cache, seed);
    stress.run(3000);
    if (HasFatalFailure()) return;
    // The pool must have been small enough to refuse and large enough to share.
    EXPECT_GT(stress.successes, 1500);
    EXPECT_GT(stress.refusals, 10);
    if (c.block_size > 1) {  // size 1 has no partial blocks to copy
      EXPECT_GT(stress.copies, 10);
    }
    if (c.prefix_cache) {
      EXPECT_GT(stress.manager().prefix_stats().hits, 10);
      EXPECT_GT(stress.manager().prefix_stats().evictions, 10);
    } else {
      EXPECT_EQ(stress.manager().prefix_stats().hits, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, BlockManagerStressTest,
                         ::testing::Values(StressCase{6, 1, true}, StressCase{12, 2, true},
                                           StressCase{16, 4, true}, StressCase{16, 4, false},
                                           StressCase{10, 16, true}),
                         [](const auto& param_info) {
                           return "blocks" + std::to_string(param_info.param.n_blocks) + "_bs" +
                                  std::to_string(param_info.param.block_size) +
                                  (param_info.param.prefix_cache ? "_prefix" : "_noprefix");
                         });

}  // namespace
}  // namespace kvforge
