// StepEvent::cached_tokens: the prompt tokens a request took from a cache
// (the RAM prefix cache or blocks restored from the disk tier) instead of
// computing them. It must equal what the engine's own counters say it
// reused for that request: 0 on a first run, whole blocks (never the
// prompt's last token) on a repeat, shared by every branch of the request.
// Also Engine::export_prefix / import_prefix (llama-server's slot save and
// restore): blocks moved to a new engine serve its next request as cached
// tokens with the same greedy tokens; a bad file is refused naming why.
#include <gtest/gtest.h>

#include <set>

#include "engine_test_util.h"
#include "temp_dir.h"

namespace kvforge {
namespace {

class EngineCachedTokensTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = testing::make_engine_test_model().release(); }
  static void TearDownTestSuite() { delete model_; }
  static Model* model_;
};
Model* EngineCachedTokensTest::model_ = nullptr;

EngineOptions paged_options() {
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 32;
  o.max_batched_tokens = 64;
  o.kv_format = {KvDtype::F16, KvDtype::F16};
  return o;
}

// Runs one request of n branches to its end; returns every cached_tokens value its events
// carried (one value expected).
std::set<int32_t> cached_tokens_of(Engine& e, std::span<const int32_t> prompt, int n = 1) {
  SamplingParams p = testing::greedy(3);
  p.temperature = n > 1 ? 1.0f : 0.0f;
  p.seed = 7;
  const RequestId id = e.add_request(prompt, p, n);
  std::set<int32_t> seen;
  while (e.has_unfinished())
    for (const StepEvent& ev : e.step())
      if (ev.request == id) seen.insert(ev.cached_tokens);
  return seen;
}

TEST_F(EngineCachedTokensTest, RepeatReportsTheBlocksTheRamPrefixCacheServed) {
  ThreadPool pool(1);
  Engine e(*model_, pool, paged_options());
  const std::vector<int32_t> prompt = testing::make_prompt(40, 3);
  EXPECT_EQ(cached_tokens_of(e, prompt), std::set<int32_t>{0});
  const int64_t hits = e.stats().prefix.hits;
  // 40 tokens: blocks [0,16) and [16,32) are whole; the last token is always computed.
  EXPECT_EQ(cached_tokens_of(e, prompt), std::set<int32_t>{32});
  EXPECT_EQ((e.stats().prefix.hits - hits) * 16, 32);
  // 48 tokens sharing those 32: the third block holds the last token, so it is computed.
  std::vector<int32_t> longer = prompt;
  longer.resize(48, 9);
  EXPECT_EQ(cached_tokens_of(e, longer), std::set<int32_t>{32});
  // A prompt shorter than one block is never served from the cache.
  const std::vector<int32_t> short_prompt(prompt.begin(), prompt.begin() + 12);
  EXPECT_EQ(cached_tokens_of(e, short_prompt), std::set<int32_t>{0});
  // Parallel samples: every branch reports its request's one count.
  EXPECT_EQ(cached_tokens_of(e, prompt, 3), std::set<int32_t>{32});
}

TEST_F(EngineCachedTokensTest, ANewEngineCountsTheBlocksItRestoredFromDisk) {
  testing::TempDir dir("kvforge-cached-tokens");
  EngineOptions o = paged_options();
  o.kv_disk_dir = dir.path.string();
  const std::vector<int32_t> prompt = testing::make_prompt(50, 4);
  ThreadPool pool(1);
  {
    Engine first(*model_, pool, o);
    EXPECT_EQ(cached_tokens_of(first, prompt), std::set<int32_t>{0});
  }
  Engine second(*model_, pool, o);  // an empty RAM cache: only the disk tier can serve
  EXPECT_EQ(cached_tokens_of(second, prompt), std::set<int32_t>{48});
  EXPECT_EQ(second.stats().disk.tokens_restored, 48);
  EXPECT_EQ(second.stats().prefix.hits, 0);
}

// Runs the prompt greedily alone; returns its tokens.
std::vector<int32_t> greedy_tokens(Engine& e, std::span<const int32_t> prompt) {
  testing::EngineRecorder rec;
  const RequestId id = e.add_request(prompt, testing::greedy(4));
  while (e.has_unfinished()) rec.record(e.step());
  return rec.at(id, 0).tokens;
}

std::string import_refusal(Engine& e, std::span<const int32_t> tokens,
                           const std::vector<std::vector<uint8_t>>& files) {
  try {
    e.import_prefix(tokens, files);
  } catch (const std::invalid_argument& err) {
    return err.what();
  }
  return "";
}

TEST_F(EngineCachedTokensTest, ExportedBlocksServeAnotherEngineAsCachedTokens) {
  ThreadPool pool(1);
  const std::vector<int32_t> prompt = testing::make_prompt(40, 5);
  Engine saver(*model_, pool, paged_options());
  const std::vector<int32_t> expected = greedy_tokens(saver, prompt);
  const int64_t hits = saver.stats().prefix.hits;
  const auto files = saver.export_prefix(prompt);
  ASSERT_EQ(files.size(), 2u);  // the whole blocks of 40 tokens: [0,16), [16,32)
  EXPECT_EQ(saver.stats().prefix.hits, hits) << "moving blocks is no prompt's hit";

  Engine restored(*model_, pool, paged_options());
  EXPECT_EQ(restored.import_prefix(prompt, files), 32);
  EXPECT_EQ(restored.stats().kv_blocks_used, 0);  // cached, held by no one
  EXPECT_EQ(restored.stats().prefix.misses, 0);
  EXPECT_EQ(cached_tokens_of(restored, prompt), std::set<int32_t>{32});
  Engine fresh(*model_, pool, paged_options());
  EXPECT_EQ(greedy_tokens(restored, prompt), expected);
  EXPECT_EQ(greedy_tokens(fresh, prompt), expected);
  EXPECT_EQ(fresh.export_prefix(std::vector<int32_t>(prompt.begin(), prompt.begin() + 10)).size(),
            0u);  // less than a block: nothing to save
}

TEST_F(EngineCachedTokensTest, ImportRefusesCorruptForeignAndMismatchedFilesNamingWhy) {
  ThreadPool pool(1);
  const std::vector<int32_t> prompt = testing::make_prompt(40, 6);
  Engine saver(*model_, pool, paged_options());
  greedy_tokens(saver, prompt);
  const auto files = saver.export_prefix(prompt);
  ASSERT_EQ(files.size(), 2u);
  Engine e(*model_, pool, paged_options());

  auto corrupt = files;
  corrupt[1][corrupt[1].size() / 2] ^= 0x40;
  EXPECT_NE(import_refusal(e, prompt, corrupt).find("block 1: checksum"), std::string::npos)
      << import_refusal(e, prompt, corrupt);
  auto truncated = files;
  truncated[0].resize(100);
  EXPECT_NE(import_refusal(e, prompt, truncated).find("block 0: truncated"), std::string::npos);
  std::vector<int32_t> other = prompt;
  other[3] += 1;
  EXPECT_NE(import_refusal(e, other, files).find("block 0"), std::string::npos);
  // Nothing was kept by a refusal: the prompt is still computed whole.
  EXPECT_EQ(cached_tokens_of(e, prompt), std::set<int32_t>{0});

  RandomModelSpec spec;
  spec.name = "engine-tiny-other";
  spec.n_ctx = 256;
  spec.seed = 12;
  const auto other_model = testing::make_test_model(spec);
  Engine foreign(*other_model, pool, paged_options());
  const std::string why = import_refusal(foreign, prompt, files);
  EXPECT_NE(why.find("another model"), std::string::npos) << why;
  EXPECT_NE(foreign.block_fingerprint(), e.block_fingerprint());
}

}  // namespace
}  // namespace kvforge
