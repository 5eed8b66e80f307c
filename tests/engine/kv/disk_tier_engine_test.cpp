// The disk tier inside the batching engine: greedy logits are bit-identical
// whether a prompt's prefix is computed, reused from RAM, or restored from
// disk (same engine after eviction, or a new engine on the same directory as
// after a restart), for f16 and int8 KV; damaged files are recomputed; a
// failing disk keeps serving.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine_test_util.h"
#include "file_size_limit.h"
#include "temp_dir.h"

namespace kvforge {
namespace {

namespace fs = std::filesystem;
using testing::EngineRecorder;
using testing::greedy;
using testing::make_prompt;
using testing::TempDir;
using testing::Trace;

EngineOptions options(KvFormat kv, const fs::path& dir) {
  EngineOptions o;
  o.block_size = 8;
  o.kv_blocks = 14;  // 112 positions: one ~90-token sequence evicts another's blocks
  o.max_batched_tokens = 32;
  o.kv_format = kv;
  o.kv_disk_dir = dir.string();
  return o;
}

// Runs the prompts one after another (each alone) and returns their traces.
std::vector<Trace> run_each(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                            EngineRecorder& rec, int max_tokens = 6) {
  std::vector<Trace> out;
  for (const auto& p : prompts) {
    const RequestId id = engine.add_request(p, greedy(max_tokens));
    while (engine.has_unfinished()) rec.record(engine.step());
    out.push_back(rec.at(id, 0));
  }
  return out;
}

class DiskTierEngine : public ::testing::TestWithParam<KvFormat> {};

TEST_P(DiskTierEngine, RestoredPrefixGivesBitIdenticalLogits) {
  auto model = testing::make_engine_test_model();
  ThreadPool pool(1);
  TempDir dir("kvforge-disk-engine");
  const std::vector<int32_t> doc = make_prompt(83, 1), other = make_prompt(90, 2);
  EngineRecorder cold_rec;
  Engine cold(*model, pool, cold_rec.hook(options(GetParam(), "")));
  const Trace want = run_each(cold, {doc}, cold_rec)[0];

  EngineRecorder rec;
  Engine engine(*model, pool, rec.hook(options(GetParam(), dir.path)));
  // doc is written through, `other` evicts (the tail of) it from the pool,
  // and doc's prefix comes back from RAM's head and the disk's rest.
  std::vector<Trace> got = run_each(engine, {doc, other}, rec);
  const EngineStats before = engine.stats();
  got.push_back(run_each(engine, {doc}, rec)[0]);
  const EngineStats st = engine.stats();
  EXPECT_GT(st.disk.hits, 0);
  EXPECT_EQ(st.disk.hits + st.prefix.hits - before.prefix.hits, 10)
      << "(83 - 1) / 8 full blocks reused from one tier or the other";
  EXPECT_EQ(st.disk.files_rejected, 0);
  EXPECT_GT(st.disk.blocks_stored, 20);
  EXPECT_EQ(got[0].tokens, want.tokens);
  EXPECT_EQ(got[2].tokens, want.tokens);
  EXPECT_EQ(got[2].logits, want.logits) << "logits differ bit for bit after a restore";

  // A new engine on the same directory: the RAM pool is empty, the disk is not.
  EngineRecorder rec2;
  Engine restarted(*model, pool, rec2.hook(options(GetParam(), dir.path)));
  const Trace again = run_each(restarted, {doc}, rec2)[0];
  EXPECT_EQ(restarted.stats().disk.hits, 10);
  EXPECT_EQ(restarted.stats().prefix.hits, 0);
  EXPECT_EQ(again.logits, want.logits);
  EXPECT_EQ(restarted.stats().kv_blocks_free, restarted.n_blocks()) << "nothing leaks";
}

INSTANTIATE_TEST_SUITE_P(Formats, DiskTierEngine,
                         ::testing::Values(KvFormat{KvDtype::F16, KvDtype::F16},
                                           KvFormat{KvDtype::Int8, KvDtype::Int8}),
                         [](const auto& p) { return std::string(kv_dtype_name(p.param.k)); });

// Every file damaged between runs: each is rejected and deleted, the blocks
// are recomputed, and the output is the cold run's.
TEST(DiskTierEngineFaults, DamagedFilesAreRecomputed) {
  auto model = testing::make_engine_test_model();
  ThreadPool pool(1);
  TempDir dir("kvforge-disk-engine");
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  const std::vector<int32_t> doc = make_prompt(83, 3);
  EngineRecorder rec;
  Engine first(*model, pool, rec.hook(options(f16, dir.path)));
  const Trace want = run_each(first, {doc}, rec)[0];
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    if (++n % 2)
      fs::resize_file(e.path(), fs::file_size(e.path()) - 1);
    else {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(200);
      f.put('\x5a');
    }
  }
  EngineRecorder rec2;
  Engine second(*model, pool, rec2.hook(options(f16, dir.path)));
  const Trace got = run_each(second, {doc}, rec2)[0];
  EXPECT_EQ(second.stats().disk.hits, 0);
  EXPECT_EQ(second.stats().disk.files_rejected, 1) << "the first bad block ends the restore";
  EXPECT_EQ(got.logits, want.logits);
}

// Writes fail part way (a file-size limit standing in for a full disk):
// one warning, RAM-only serving, the same output.
TEST(DiskTierEngineFaults, AFailingDiskKeepsServing) {
  auto model = testing::make_engine_test_model();
  ThreadPool pool(1);
  TempDir dir("kvforge-disk-engine");
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  const std::vector<int32_t> doc = make_prompt(83, 4);
  EngineRecorder cold_rec;
  Engine cold(*model, pool, cold_rec.hook(options(f16, "")));
  const Trace want = run_each(cold, {doc}, cold_rec)[0];

  std::vector<std::string> warnings;
  EngineOptions o = options(f16, dir.path);
  o.on_warning = [&](const std::string& m) { warnings.push_back(m); };
  EngineRecorder rec;
  Engine engine(*model, pool, rec.hook(o));
  std::vector<Trace> got;
  {
    const testing::FileSizeLimit full_disk(100);
    ASSERT_TRUE(full_disk.applied());
    got = run_each(engine, {doc, doc}, rec);
  }
  EXPECT_TRUE(engine.stats().disk.degraded);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(got[0].logits, want.logits);
  EXPECT_EQ(got[1].logits, want.logits);
}

// A model with sliding-window layers: the tier is off with one warning (a
// windowed group's released blocks could not be restored), and serving goes on.
TEST(DiskTierEngineRefusals, SlidingWindowModelsServeWithoutTheTier) {
  RandomModelSpec spec;
  spec.name = "swa-mistral";
  spec.arch = "llama";
  spec.n_layer = 2;
  spec.n_ctx = 256;
  spec.sliding_window = 8;
  spec.swa_pattern = 0;  // every layer windowed (Mistral-style)
  spec.seed = 23;
  auto model = testing::make_test_model(spec);
  ThreadPool pool(1);
  TempDir dir("kvforge-disk-engine");
  std::vector<std::string> warnings;
  EngineOptions o = options({KvDtype::F16, KvDtype::F16}, dir.path);
  o.on_warning = [&](const std::string& m) { warnings.push_back(m); };
  EngineRecorder rec;
  Engine engine(*model, pool, rec.hook(o));
  run_each(engine, {make_prompt(40, 1)}, rec);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("sliding-window"), std::string::npos) << warnings[0];
  EXPECT_FALSE(engine.stats().disk.enabled);
  EXPECT_TRUE(fs::is_empty(dir.path));
}

}  // namespace
}  // namespace kvforge
