// StepEvent::cached_tokens: the prompt tokens a request took from a cache
// (the RAM prefix cache or blocks restored from the disk tier) instead of
// computing them. It must equal what the engine's own counters say it
// reused for that request: 0 on a first run, whole blocks (never the
// prompt's last token) on a repeat, shared by every branch of the request.
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

}  // namespace
}  // namespace kvforge
