// The disk tier for a hybrid model (Qwen 3.5): a prompt's K/V blocks and
// the recurrent-state snapshot at its last block boundary go to disk
// together; a new engine on the same directory (as after a restart)
// restores both and computes only the tokens after the snapshot, with the
// cold run's bits. A snapshot file that fails verification restores
// nothing; one written for another model or as a K/V block is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/kv/kv_disk_tier.h"
#include "engine_test_util.h"
#include "temp_dir.h"

namespace kvforge {
namespace {

namespace fs = std::filesystem;
using testing::EngineRecorder;
using testing::make_prompt;
using testing::TempDir;
using testing::Trace;

EngineOptions options(const fs::path& dir, int32_t chunk) {
  EngineOptions o = testing::hybrid_prefix_options(chunk);
  o.kv_disk_dir = dir.string();
  return o;
}

Trace run(Engine& e, EngineRecorder& rec, const std::vector<int32_t>& prompt) {
  const RequestId id = e.add_request(prompt, testing::greedy(6));
  while (e.has_unfinished()) rec.record(e.step());
  return rec.at(id, 0);
}

// A 53-token prompt leaves its blocks and a snapshot at 48 on disk.
struct HybridDisk : ::testing::Test {
  std::unique_ptr<Model> model = testing::make_hybrid_engine_test_model();
  std::vector<int32_t> prompt = make_prompt(53, 4);
  TempDir dir{"kvforge-disk-hybrid"};
  ThreadPool pool{2};

  void write_through(int32_t chunk) {
    EngineRecorder rec;
    Engine first(*model, pool, rec.hook(options(dir.path, chunk)));
    run(first, rec, prompt);
    EXPECT_EQ(first.stats().disk.blocks_stored, 3);
    EXPECT_EQ(first.stats().disk.states_stored, 1) << "the snapshot at the prompt's boundary";
  }
  // The snapshot's file: the one sized for 48 tokens and a state.
  fs::path state_file() const {
    const size_t bytes = 64 + 4 * 48 + model->config().state_bytes_per_sequence() + 8;
    for (const auto& e : fs::directory_iterator(dir.path))
      if (fs::file_size(e.path()) == bytes) return e.path();
    return {};
  }
};

TEST_F(HybridDisk, RestartRestoresBlocksAndStateWithTheColdRunsBits) {
  std::vector<int32_t> longer = prompt;
  for (int32_t t : make_prompt(11, 9)) longer.push_back(t);
  const Trace cold = testing::run_alone(*model, prompt, 6);
  const Trace cold_longer = testing::run_alone(*model, longer, 6);
  for (int32_t chunk : {512, 7}) {  // 7: the boundary at 48 falls inside a prefill chunk
    SCOPED_TRACE("max_batched_tokens " + std::to_string(chunk));
    fs::remove_all(dir.path);
    write_through(chunk);
    for (const auto& [p, want] : {std::pair{&prompt, &cold}, std::pair{&longer, &cold_longer}}) {
      EngineRecorder rec;
      Engine restarted(*model, pool, rec.hook(options(dir.path, chunk)));
      const Trace got = run(restarted, rec, *p);
      const EngineStats st = restarted.stats();
      EXPECT_EQ(st.disk.hits, 3) << "the blocks before the snapshot";
      EXPECT_EQ(st.disk.state_hits, 1);
      EXPECT_EQ(st.tokens_computed, int64_t(p->size()) - 48 + 5) << "only the rest is computed";
      EXPECT_EQ(got.tokens, want->tokens);
      EXPECT_EQ(got.logits, want->logits) << "logits differ bit for bit after a restore";
      EXPECT_EQ(st.kv_blocks_free, restarted.n_blocks()) << "nothing leaks";
    }
  }
}

TEST_F(HybridDisk, ACorruptedSnapshotIsAVerifiedMiss) {
  const Trace cold = testing::run_alone(*model, prompt, 6);
  write_through(512);
  const fs::path state = state_file();
  ASSERT_FALSE(state.empty());
  {
    std::fstream f(state, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 + 4 * 48 + 100);  // inside the state's floats
    f.put('\x5a');
  }
  EngineRecorder rec;
  Engine second(*model, pool, rec.hook(options(dir.path, 512)));
  const Trace got = run(second, rec, prompt);
  const EngineStats st = second.stats();
  EXPECT_EQ(st.disk.state_hits, 0);
  EXPECT_EQ(st.disk.hits, 0) << "K/V without the state after it is not used";
  EXPECT_EQ(st.disk.files_rejected, 1);
  EXPECT_EQ(st.tokens_computed, 53 + 5);
  EXPECT_EQ(got.logits, cold.logits);
  // The rejected file was deleted and the recomputed prompt wrote its
  // snapshot again: a third run restores it.
  EXPECT_EQ(st.disk.states_stored, 1);
  EngineRecorder rec3;
  Engine third(*model, pool, rec3.hook(options(dir.path, 512)));
  EXPECT_EQ(run(third, rec3, prompt).logits, cold.logits);
  EXPECT_EQ(third.stats().disk.state_hits, 1);
}

// The tier itself: a snapshot is read back only by the tier of the model
// that wrote it, and a K/V block's file is never read as a snapshot.
TEST(HybridDiskTier, SnapshotsOfAnotherModelOrKindAreRefused) {
  TempDir dir("kvforge-disk-hybrid");
  const std::vector<int32_t> tokens = make_prompt(8, 1);
  KvBlockIdentity a{1, {}, 8, 64};
  a.state_bytes = 96;
  KvBlockIdentity b = a;
  b.model = 2;
  const std::vector<uint8_t> state(96, 7), block(64, 9);
  const uint64_t hash = 0x1234;
  KvDiskTier ta(dir.path, 1 << 20, a, [](const std::string&) {});
  ASSERT_TRUE(ta.store_state(hash, tokens, state));
  ASSERT_TRUE(ta.store(hash, tokens, block));
  EXPECT_TRUE(ta.contains_state(hash));
  BlockFileReader reader(KvReadMode::kBuffered);
  std::span<const uint8_t> payload;
  EXPECT_EQ(ta.read_state(hash, tokens, reader, payload).outcome, KvDiskTier::BlockRead::kHit);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), state.begin(), state.end()));

  // Model b's tier sees none of a's files; planted under b's name, a's
  // snapshot fails b's fingerprint check.
  KvDiskTier tb(dir.path, 1 << 20, b, [](const std::string&) {});
  EXPECT_FALSE(tb.contains_state(hash));
  fs::copy_file(ta.path_of(KvDiskTier::state_key(hash)), tb.path_of(KvDiskTier::state_key(hash)));
  EXPECT_EQ(tb.read_state(hash, tokens, reader, payload).outcome, KvDiskTier::BlockRead::kRejected);
  // a's K/V block under its own snapshot's name: another identity, refused.
  fs::remove(ta.path_of(KvDiskTier::state_key(hash)));
  fs::copy_file(ta.path_of(hash), ta.path_of(KvDiskTier::state_key(hash)));
  EXPECT_EQ(ta.read_state(hash, tokens, reader, payload).outcome, KvDiskTier::BlockRead::kRejected);
  EXPECT_FALSE(ta.note_state_read(hash, ta.read_state(hash, tokens, reader, payload)));
  EXPECT_EQ(ta.stats().files_rejected, 1);
  EXPECT_FALSE(ta.contains_state(hash)) << "deleted";
}

}  // namespace
}  // namespace kvforge
