// PrefixLoader's bounds on a read that does not return (a hung file system,
// injected here): take() abandons the load after the stall timeout with the
// blocks read so far and an I/O error naming the stuck file, queued loads
// come back empty, cancel() does not wait for the read, and the thread never
// writes into abandoned blocks afterwards.
#include "engine/kv/prefix_loader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "engine/kv/block_manager.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/kv/prefix_cache.h"
#include "temp_dir.h"

namespace kvforge {
namespace prefix_loader_test {  // named: the tests build in unity batches

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kPatience{10};  // the injected read's own bound

// A read that blocks until released (or kPatience passes).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, open = false;
  void pass() {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait_for(lock, kPatience, [&] { return open; });
  }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, kPatience, [&] { return entered; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A pool of 8 blocks of 4 positions, and a tier holding the 3 blocks of one
// 12-token prefix; reads of the block `stuck_at` wait at the gate.
struct Fixture {
  TempDir dir{"kvforge-prefix-loader"};
  ModelConfig config = [] {
    ModelConfig c;
    c.n_layer = 2;
    c.n_kv_head = 2;
    c.head_dim = 16;
    return c;
  }();
  BlockManager blocks{8, 4, false};
  PagedKvCache cache{config, blocks, {}};
  std::vector<std::string> warnings;
  KvDiskTier tier{dir.path, uint64_t(1) << 24, KvBlockIdentity{42, {}, 4, cache.block_bytes()},
                  [this](const std::string& m) { warnings.push_back(m); }};
  std::vector<int32_t> tokens = std::vector<int32_t>{5, 9, 2, 7, 3, 3, 8, 1, 4, 6, 0, 2};
  std::vector<uint64_t> hashes;
  Gate gate;

  Fixture() {
    uint64_t h = PrefixCache::kRootHash;
    for (size_t i = 0; i < 3; ++i) {
      h = PrefixCache::chain_hash(h, std::span(tokens).subspan(i * 4, 4));
      hashes.push_back(h);
      EXPECT_TRUE(tier.store(h, std::span(tokens).first((i + 1) * 4), payload(i)));
    }
  }
  std::vector<uint8_t> payload(size_t i) const {
    return std::vector<uint8_t>(cache.block_bytes(), uint8_t(i + 1));
  }
  std::vector<uint8_t> block(BlockId b) const {
    std::vector<uint8_t> out(cache.block_bytes());
    cache.export_block(b, out);
    return out;
  }
  PrefixLoadJob job(SeqId seq, std::vector<BlockId> dst) {
    return {seq,
            0,
            tokens,
            hashes,
            [this, dst = std::move(dst)](size_t i, std::span<const uint8_t> payload) {
              cache.import_block(dst[i], payload);
            },
            3};
  }
  std::unique_ptr<PrefixLoader> loader(milliseconds stall_timeout, size_t stuck_at) {
    return std::make_unique<PrefixLoader>(
        tier, KvReadMode::kBuffered, stall_timeout,
        [this, stuck_at](uint64_t h, std::span<const int32_t> prefix, BlockFileReader& reader,
                         std::span<const uint8_t>& payload) {
          if (h == hashes[stuck_at]) gate.pass();
          return tier.read_block(h, prefix, reader, payload);
        });
  }
};

TEST(PrefixLoader, AStuckReadIsAbandonedAfterTheStallTimeout) {
  Fixture f;
  auto loader = f.loader(milliseconds(200), 1);
  const std::vector<uint8_t> untouched = f.block(1);
  // The stall deadline runs from the job's last progress, which comes after
  // submit(): timing from before it is the bound the loader promises.
  const auto start = Clock::now();
  loader->submit(f.job(1, {0, 1, 2}));
  loader->submit(f.job(2, {3, 4, 5}));  // queued behind the stuck read
  const std::vector<PrefixLoadResult> got = loader->take(true);
  const double waited = seconds_since(start);
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 5.0) << "take() waited on the stuck read";
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].seq, 1);
  EXPECT_EQ(got[0].n_good(), 1) << "the block read before the stall is kept";
  ASSERT_EQ(got[0].reads.size(), 2u);
  EXPECT_EQ(got[0].reads[1].outcome, KvDiskTier::BlockRead::kIoError);
  EXPECT_NE(got[0].reads[1].error.find(f.tier.path_of(f.hashes[1]).string()), std::string::npos)
      << got[0].reads[1].error;
  EXPECT_NE(got[0].reads[1].error.find("did not finish within 200 ms"), std::string::npos);
  EXPECT_EQ(got[1].seq, 2);
  EXPECT_EQ(got[1].n_good(), 0);
  EXPECT_EQ(f.block(0), f.payload(0));
  EXPECT_EQ(loader->pending(), 0);
  EXPECT_TRUE(loader->take(true).empty()) << "nothing left to wait for";
  // The engine thread's accounting turns the tier off, naming the file.
  EXPECT_TRUE(f.tier.note_read(f.hashes[0], got[0].reads[0]));
  EXPECT_FALSE(f.tier.note_read(f.hashes[1], got[0].reads[1]));
  EXPECT_FALSE(f.tier.enabled());
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("did not finish"), std::string::npos) << f.warnings[0];
  // The read returns a hit at last; its block is not written.
  f.gate.release();
  loader.reset();
  EXPECT_EQ(f.block(1), untouched);
}

TEST(PrefixLoader, CancelDoesNotWaitForAStuckRead) {
  Fixture f;
  auto loader = f.loader(milliseconds(60000), 0);
  const std::vector<uint8_t> untouched = f.block(0);
  loader->submit(f.job(1, {0, 1, 2}));
  f.gate.wait_entered();
  const auto start = Clock::now();
  loader->cancel(1);
  EXPECT_LT(seconds_since(start), 1.0) << "cancel() waited on the stuck read";
  EXPECT_EQ(loader->pending(), 0);
  EXPECT_TRUE(loader->take(true).empty());
  f.gate.release();
  loader.reset();
  EXPECT_EQ(f.block(0), untouched);
}

TEST(PrefixLoader, AnUnhurriedLoadFinishesWhole) {
  Fixture f;
  f.gate.release();
  auto loader = f.loader(milliseconds(200), 1);
  loader->submit(f.job(1, {0, 1, 2}));
  const std::vector<PrefixLoadResult> got = loader->take(true);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].n_good(), 3);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(f.block(BlockId(i)), f.payload(i));
}

}  // namespace prefix_loader_test
}  // namespace kvforge
