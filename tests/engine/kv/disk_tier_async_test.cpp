// Prefix blocks restored from disk off the engine thread, in both KV modes
// (the one read path, kv/disk_tier_reader.h): a sequence whose prefix is on
// disk loads while another decodes (the step that admits it does not compute
// it), and both outputs stay bit-identical to cold runs; aborting a loading
// request frees its blocks or slot, destroying the engine stops the load
// first; a corrupt file met by the load ends the restore there and the rest
// is recomputed, with the same hit and miss counts in both modes; a FIFO, a
// directory or a link under a block's name (before or after the engine's
// scan) costs that block alone.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <tuple>

#include "engine/kv/prefix_cache.h"
#include "engine/static_pipeline/plan_compiler.h"
#include "engine_test_util.h"
#include "fifo_watchdog.h"
#include "temp_dir.h"

namespace kvforge {
namespace disk_tier_async_test {  // named: the tests build in unity batches

namespace fs = std::filesystem;
using testing::EngineRecorder;
using testing::greedy;
using testing::make_prompt;
using testing::TempDir;
using testing::Trace;

constexpr int32_t kBlock = 8;

EngineOptions options(const fs::path& dir) {
  EngineOptions o;
  o.block_size = kBlock;
  o.kv_blocks = 32;
  o.max_batched_tokens = 32;
  o.kv_format = {KvDtype::F16, KvDtype::F16};
  o.kv_disk_dir = dir.string();
  return o;
}

Trace run_alone(Engine& engine, EngineRecorder& rec, const std::vector<int32_t>& prompt,
                int max_tokens) {
  const RequestId id = engine.add_request(prompt, greedy(max_tokens));
  while (engine.has_unfinished()) rec.record(engine.step());
  return rec.at(id, 0);
}

// The file of `prompt`'s block at `depth` in dir (empty when none).
fs::path block_file(const fs::path& dir, const std::vector<int32_t>& prompt, size_t depth) {
  uint64_t h = PrefixCache::kRootHash;
  for (size_t i = 0; i <= depth; ++i)
    h = PrefixCache::chain_hash(h, std::span(prompt).subspan(i * kBlock, kBlock));
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%016" PRIx64 ".kvb", h);
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= 21 && name.compare(name.size() - 21, 21, suffix) == 0) return e.path();
  }
  return {};
}

enum class Mode { kPaged, kStatic };

// Two static slots holding doc (83 + 4 tokens) and chat (9 + 12).
StaticConfig slots_config() {
  StaticConfig c;
  c.max_prompt_len = 88;
  c.min_response_len = 16;
  c.prefill_chunk = 16;
  c.generate_variants = {32, 64, 104};
  c.slots = 2;
  c.kv_format = {KvDtype::F16, KvDtype::F16};
  return c;
}

struct Fixture {
  std::unique_ptr<Model> model = testing::make_engine_test_model();
  ThreadPool pool{1};
  Mode mode;
  PlanSet plans;  // the static mode's
  TempDir dir{"kvforge-disk-async"};
  std::vector<int32_t> doc = make_prompt(83, 5);  // 10 full blocks before its last token
  std::vector<int32_t> chat = make_prompt(9, 6);
  Trace want_doc, want_chat;

  // Cold traces in `m`, and doc's blocks written to disk by a paged engine
  // now gone (the static slots read the pool's files).
  explicit Fixture(Mode m = Mode::kPaged) : mode(m) {
    if (mode == Mode::kStatic) plans = compile_plans(*model, slots_config(), 1);
    EngineRecorder cold_rec;
    auto cold = make("", cold_rec);
    want_doc = run_alone(*cold, cold_rec, doc, 4);
    want_chat = run_alone(*cold, cold_rec, chat, 12);
    EngineRecorder rec;
    Engine writer(*model, pool, rec.hook(options(dir.path)));
    run_alone(writer, rec, doc, 1);
  }

  // An engine of the fixture's mode over the tier in `disk` ("": none).
  std::unique_ptr<Engine> make(const fs::path& disk, EngineRecorder& rec) {
    if (mode == Mode::kStatic)
      return std::make_unique<Engine>(*model, pool, plans, rec.hook(options(disk)));
    return std::make_unique<Engine>(*model, pool, rec.hook(options(disk)));
  }

  // A new engine: `chat` starts decoding, then `doc` arrives; returns doc's id
  // once the step that admitted it has run.
  RequestId start_both(Engine& engine, EngineRecorder& rec) {
    const RequestId c = engine.add_request(chat, greedy(12));
    rec.record(engine.step());
    rec.record(engine.step());
    const RequestId d = engine.add_request(doc, greedy(4));
    const size_t chat_tokens = rec.at(c, 0).tokens.size();
    rec.record(engine.step());
    EXPECT_EQ(rec.at(c, 0).tokens.size(), chat_tokens + 1) << "chat decoded in that step";
    EXPECT_TRUE(rec.at(d, 0).logits.empty()) << "doc was admitted loading, not computed";
    EXPECT_EQ(engine.stats().running, 2);
    return d;
  }
};

class DiskTierAsync : public ::testing::TestWithParam<Mode> {};

TEST_P(DiskTierAsync, ASequenceLoadsWhileAnotherDecodesAndBothMatchColdRuns) {
  Fixture f(GetParam());
  EngineRecorder rec;
  const std::unique_ptr<Engine> owned = f.make(f.dir.path, rec);
  Engine& engine = *owned;
  const RequestId d = f.start_both(engine, rec);
  EXPECT_EQ(engine.stats().disk.hits, 0) << "a load is counted when it lands";
  while (engine.has_unfinished()) rec.record(engine.step());
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.disk.hits, 10);
  EXPECT_EQ(st.disk.files_rejected, 0);
  EXPECT_EQ(rec.at(d, 0).logits, f.want_doc.logits);
  EXPECT_EQ(rec.at(d - 1, 0).logits, f.want_chat.logits);
  EXPECT_EQ(st.kv_blocks_free, engine.n_blocks()) << "nothing leaks";
}

TEST_P(DiskTierAsync, AbortingALoadingRequestFreesItsBlocks) {
  Fixture f(GetParam());
  EngineRecorder rec;
  const std::unique_ptr<Engine> owned = f.make(f.dir.path, rec);
  Engine& engine = *owned;
  const RequestId d = f.start_both(engine, rec);
  EXPECT_TRUE(engine.abort(d));
  while (engine.has_unfinished()) rec.record(engine.step());
  EXPECT_EQ(rec.at(d - 1, 0).logits, f.want_chat.logits);
  EXPECT_EQ(engine.stats().kv_blocks_free, engine.n_blocks()) << "nothing leaks";
  // The files are intact: the same prompt now restores in full.
  const Trace again = run_alone(engine, rec, f.doc, 4);
  EXPECT_EQ(again.logits, f.want_doc.logits);
  EXPECT_EQ(engine.stats().disk.hits, 10);
}

// The loader thread may still be writing into the pool: the engine stops
// it before the pool goes (ASan and TSan builds check).
TEST_P(DiskTierAsync, DestroyingTheEngineDuringALoadIsSafe) {
  Fixture f(GetParam());
  EngineRecorder rec;
  std::unique_ptr<Engine> engine = f.make(f.dir.path, rec);
  f.start_both(*engine, rec);
  engine.reset();
  // The files outlive it, whole: a new engine restores the prefix in full.
  EngineRecorder rec2;
  const std::unique_ptr<Engine> again = f.make(f.dir.path, rec2);
  EXPECT_EQ(run_alone(*again, rec2, f.doc, 4).logits, f.want_doc.logits);
  EXPECT_EQ(again->stats().disk.hits, 10);
}

TEST_P(DiskTierAsync, ACorruptFileEndsTheLoadAndTheRestIsRecomputed) {
  Fixture f(GetParam());
  // Flip a byte of the file of doc's fifth block (depth 4).
  const fs::path path = block_file(f.dir.path, f.doc, 4);
  int damaged = 0;
  if (!path.empty()) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(300);
    const char c = char(file.get());
    file.seekp(300);
    file.put(char(c ^ 0x10));
    ++damaged;
  }
  ASSERT_EQ(damaged, 1);
  EngineRecorder rec;
  const std::unique_ptr<Engine> owned = f.make(f.dir.path, rec);
  Engine& engine = *owned;
  const RequestId d = f.start_both(engine, rec);
  while (engine.has_unfinished()) rec.record(engine.step());
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.disk.hits, 4) << "depths 0-3 restored, the load stops at the bad file";
  EXPECT_EQ(st.disk.files_rejected, 1);
  EXPECT_EQ(st.disk.misses, 6 + 1) << "doc's 6 blocks past the restore, chat's one";
  EXPECT_EQ(rec.at(d, 0).logits, f.want_doc.logits);
  EXPECT_EQ(rec.at(d - 1, 0).logits, f.want_chat.logits);
  EXPECT_EQ(st.kv_blocks_free, engine.n_blocks()) << "nothing leaks";
}

INSTANTIATE_TEST_SUITE_P(Modes, DiskTierAsync, ::testing::Values(Mode::kPaged, Mode::kStatic),
                         [](const auto& p) {
                           return std::string(p.param == Mode::kPaged ? "Paged" : "Static");
                         });

// A file's size, a digest of its bytes and its modification time
// (nanoseconds), through links.
std::tuple<size_t, size_t, int64_t> snapshot(const fs::path& p) {
  std::ostringstream text;
  text << std::ifstream(p, std::ios::binary).rdbuf();
  struct stat st {};
  ::stat(p.c_str(), &st);
  return {text.str().size(), std::hash<std::string>{}(text.str()),
          st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
}

// Doc's block at depth 3 replaced by a FIFO, a directory, a link to a valid
// copy of that block outside the directory or a link to a stand-in for
// /etc/passwd, before the engine's scan or after it: the load restores
// depths 0-2 and stops there, doc and an unrelated prompt give their cold
// logits, nothing blocks or turns the tier off, and the outside files keep
// their bytes and times.
TEST(DiskTierAsyncPaged, AFifoADirectoryOrALinkCostsOnlyItsBlock) {
  Fixture f;
  enum Plant { kFifo, kDirectory, kLinkOut, kLinkPasswd };
  for (const Plant kind : {kFifo, kDirectory, kLinkOut, kLinkPasswd}) {
    for (const bool after_scan : {false, true}) {
      SCOPED_TRACE("entry kind " + std::to_string(kind) + (after_scan ? ", after" : ", before") +
                   " the scan");
      TempDir dir("kvforge-disk-async"), outside("kvforge-disk-outside");
      fs::copy(f.dir.path, dir.path, fs::copy_options::recursive);
      const fs::path target = block_file(dir.path, f.doc, 3);
      ASSERT_FALSE(target.empty());
      int64_t restored_bytes = 0;
      for (size_t d = 0; d < 3; ++d)
        restored_bytes += int64_t(fs::file_size(block_file(dir.path, f.doc, d)));
      const fs::path block_out = outside.path / "block.kvb", passwd = outside.path / "passwd";
      fs::copy_file(target, block_out);
      std::ofstream(passwd) << "root:x:0:0:root:/root:/bin/bash\n";
      const timespec past[2] = {{1000000000, 0}, {1000000000, 0}};
      for (const fs::path& p : {block_out, passwd}) ::utimensat(AT_FDCWD, p.c_str(), past, 0);
      const auto block_before = snapshot(block_out), passwd_before = snapshot(passwd);
      const auto plant = [&] {
        fs::remove(target);
        if (kind == kFifo) {
          ASSERT_EQ(::mkfifo(target.c_str(), 0644), 0);
        }
        if (kind == kDirectory) {
          fs::create_directory(target);
          std::ofstream(target / "inside") << "x";
        }
        if (kind == kLinkOut) fs::create_symlink(block_out, target);
        if (kind == kLinkPasswd) fs::create_symlink(passwd, target);
      };
      if (!after_scan) plant();
      EngineRecorder rec;
      Engine engine(*f.model, f.pool, rec.hook(options(dir.path)));
      if (after_scan) plant();
      const testing::FifoWatchdog watchdog({target}, std::chrono::seconds(20));
      EXPECT_EQ(run_alone(engine, rec, f.doc, 4).logits, f.want_doc.logits);
      EXPECT_EQ(run_alone(engine, rec, f.chat, 12).logits, f.want_chat.logits);
      EXPECT_FALSE(watchdog.fired()) << "a read blocked on the FIFO";
      const EngineStats st = engine.stats();
      EXPECT_EQ(st.disk.hits, 3);
      EXPECT_EQ(st.disk.bytes_read, restored_bytes) << "only depths 0-2 were read";
      EXPECT_EQ(st.disk.files_rejected, after_scan ? 1 : 0);
      EXPECT_FALSE(st.disk.degraded);
      EXPECT_EQ(snapshot(block_out), block_before);
      EXPECT_EQ(snapshot(passwd), passwd_before);
    }
  }
}

}  // namespace disk_tier_async_test
}  // namespace kvforge
