// Sliding windows in the paged engine: blocks that no window needs any more
// go back to the pool, and nothing a query reads is ever released. Three
// small windowed models (window 8, generation well past it):
//   gemma2-shaped: 4 layers alternating windowed/global (2 groups of 2 slots);
//   mistral-shaped: llama with every layer windowed (1 windowed group);
//   gemma3-shaped: 4 layers, pattern 3 (1 full + 3 windowed groups of 1 slot).
// For each, greedy tokens AND the logits they were sampled from are
// bit-identical to the request run alone through SequenceRunner (contiguous
// cache, nothing released), whatever the batch, chunk size (also larger than
// the window), prefix-cache hit or preemption; the tokens are those of the
// scalar double reference forward pass; and the engine's own block counts
// stay bounded by the window instead of growing with the sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/kv/kv_layer_groups.h"
#include "engine_test_util.h"
#include "reference_forward.h"

namespace kvforge {
namespace {

using testing::EngineRecorder;
using testing::Trace;

constexpr int kWindow = 8;

struct WindowModel {
  std::string label;
  std::unique_ptr<Model> model;
};

RandomModelSpec window_spec(const std::string& arch, int n_layer, int swa_pattern) {
  RandomModelSpec spec;
  spec.name = "swa-" + arch;
  spec.arch = arch;
  spec.n_layer = n_layer;
  spec.n_ctx = 512;
  spec.sliding_window = kWindow;
  spec.swa_pattern = swa_pattern;
  spec.seed = 23;
  if (arch == "gemma2") {
    spec.attn_softcap = 50.0f;
    spec.final_softcap = 30.0f;
  }
  return spec;
}

const WindowModel& gemma2_model() {
  static const WindowModel m{"gemma2", testing::make_test_model(window_spec("gemma2", 4, 0))};
  return m;
}
const WindowModel& mistral_model() {
  static const WindowModel m{"mistral", testing::make_test_model(window_spec("llama", 2, 0))};
  return m;
}
const WindowModel& gemma3_model() {
  static const WindowModel m{"gemma3", testing::make_test_model(window_spec("gemma3", 4, 3))};
  return m;
}
std::vector<const WindowModel*> all_models() {
  return {&gemma2_model(), &mistral_model(), &gemma3_model()};
}

TEST(SlidingWindowEngineTest, ModelsHaveTheIntendedLayerGroups) {
  EXPECT_EQ(KvLayerGroups::of(gemma2_model().model->config()).windows(),
            (std::vector<int32_t>{0, kWindow}));
  EXPECT_EQ(KvLayerGroups::of(mistral_model().model->config()).windows(),
            (std::vector<int32_t>{kWindow}));
  EXPECT_EQ(KvLayerGroups::of(gemma3_model().model->config()).windows(),
            (std::vector<int32_t>{0, kWindow, kWindow, kWindow}));
}

// Greedy through the double-precision reference forward pass (no paging, no windows released).
std::vector<int32_t> reference_greedy(const Model& model, const std::vector<int32_t>& prompt,
                                      int max_tokens) {
  testing::ReferenceForward ref(model, int(prompt.size()) + max_tokens);
  std::vector<float> logits;
  int32_t pos = 0;
  for (const int32_t t : prompt) logits = ref.forward(t, pos++);
  std::vector<int32_t> out;
  for (int i = 0; i < max_tokens; ++i) {
    const int32_t tok = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(tok);
    if (i + 1 < max_tokens) logits = ref.forward(tok, pos++);
  }
  return out;
}

struct WindowJob {
  std::vector<int32_t> prompt;
  int max_tokens;
  int arrive_at_step;
};

struct EngineRun {
  std::vector<Trace> traces;  // per job
  EngineStats stats;
  int32_t most_used = 0;  // kv_blocks_used_peak
};

EngineRun run_engine(const Model& model, const std::vector<WindowJob>& jobs, EngineOptions o) {
  ThreadPool pool(2);
  EngineRecorder rec;
  Engine engine(model, pool, rec.hook(o));
  std::vector<RequestId> ids(jobs.size(), -1);
  size_t added = 0;
  for (int step = 0; added < jobs.size() || engine.has_unfinished(); ++step) {
    for (size_t i = 0; i < jobs.size(); ++i)
      if (ids[i] < 0 && jobs[i].arrive_at_step <= step) {
        ids[i] = engine.add_request(jobs[i].prompt, testing::greedy(jobs[i].max_tokens));
        ++added;
      }
    rec.record(engine.step());
    EXPECT_LT(step, 5000) << "no progress";
    if (step >= 5000) break;
  }
  EngineRun r;
  for (const RequestId id : ids) r.traces.push_back(rec.traces[{id, 0}]);
  r.stats = engine.stats();
  r.most_used = r.stats.kv_blocks_used_peak;
  EXPECT_EQ(r.stats.kv_blocks_free, engine.n_blocks()) << "blocks leaked";
  return r;
}

void expect_same_as_alone(const WindowModel& m, const std::vector<WindowJob>& jobs,
                          const EngineRun& run, const std::string& what) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Trace want = testing::run_alone(*m.model, jobs[i].prompt, jobs[i].max_tokens);
    const Trace& got = run.traces[i];
    ASSERT_EQ(got.tokens, want.tokens) << m.label << ", " << what << ", job " << i;
    ASSERT_EQ(got.logits.size(), want.logits.size()) << m.label << ", " << what << ", job " << i;
    for (size_t k = 0; k < want.logits.size(); ++k)
      ASSERT_EQ(0, std::memcmp(got.logits[k].data(), want.logits[k].data(),
                               want.logits[k].size() * sizeof(float)))
          << m.label << ", " << what << ", job " << i << " token " << k << ": logits differ";
  }
}

EngineOptions options(int32_t block_size, int32_t kv_blocks, int32_t chunk, bool prefix) {
  EngineOptions o;
  o.block_size = block_size;
  o.kv_blocks = kv_blocks;
  o.max_batched_tokens = chunk;
  o.max_seqs = 8;
  o.enable_prefix_cache = prefix;
  return o;
}

TEST(SlidingWindowEngineTest, AloneMatchesTheReferenceForwardPastTheWindow) {
  for (const WindowModel* m : all_models()) {
    const std::vector<WindowJob> jobs{{testing::make_prompt(21, 5), 40, 0}};
    const EngineRun run = run_engine(*m->model, jobs, options(4, 256, 512, false));
    EXPECT_EQ(run.traces[0].tokens, reference_greedy(*m->model, jobs[0].prompt, 40)) << m->label;
    expect_same_as_alone(*m, jobs, run, "alone");
  }
}

TEST(SlidingWindowEngineTest, BatchedAndChunkedMatchAlone) {
  const std::vector<WindowJob> jobs{{testing::make_prompt(37, 1), 30, 0},
                                    {testing::make_prompt(5, 2), 45, 0},
                                    {testing::make_prompt(20, 3), 25, 2},
                                    {testing::make_prompt(61, 4), 12, 5}};
  for (const WindowModel* m : all_models())
    for (const int32_t chunk : {3, 7, 8, 13, 40, 512})  // below, at and past the window
      for (const int32_t bs : {1, 4, 16}) {
        const EngineRun run = run_engine(*m->model, jobs, options(bs, 4096 / bs, chunk, false));
        expect_same_as_alone(*m, jobs, run,
                             "chunk " + std::to_string(chunk) + ", block " + std::to_string(bs));
      }
}

// One long sequence: the engine's own peak block count is what the full
// groups need for the whole sequence plus a window and a chunk per windowed
// group, far below what the same run takes with every layer kept.
TEST(SlidingWindowEngineTest, BlocksStayBoundedByTheWindow) {
  constexpr int32_t kBlock = 4, kChunk = 16, kPrompt = 40, kGen = 200;
  constexpr int32_t kLen = kPrompt + kGen;
  constexpr int32_t kAll = (kLen + kBlock - 1) / kBlock;                                 // 60
  constexpr int32_t kPerWindowGroup = (kWindow - 1 + kChunk + kBlock - 1) / kBlock + 1;  // 7
  const std::vector<WindowJob> jobs{{testing::make_prompt(kPrompt, 9), kGen, 0}};
  for (const WindowModel* m : all_models()) {
    const KvLayerGroups groups = KvLayerGroups::of(m->model->config());
    int32_t n_full = 0, n_windowed = 0;
    for (const KvLayerGroup& g : groups.groups) (g.window ? n_windowed : n_full)++;
    const EngineRun run = run_engine(*m->model, jobs, options(kBlock, 1024, kChunk, false));
    const int32_t bound = n_full * kAll + n_windowed * kPerWindowGroup;
    EXPECT_LE(run.most_used, bound) << m->label;
    EXPECT_GE(run.most_used, n_full * kAll + n_windowed * (kWindow / kBlock)) << m->label;
    std::printf(
        "[ swa ] %-8s %d groups (%d windowed): peak %d blocks of %d tokens for a %d-token "
        "sequence; every layer kept: %d\n",
        m->label.c_str(), int(groups.groups.size()), n_windowed, run.most_used, kBlock, kLen,
        int(groups.groups.size()) * kAll);
    expect_same_as_alone(*m, jobs, run, "long");
  }
}

// A sequence far longer than the pool could hold with every layer kept.
TEST(SlidingWindowEngineTest, AllWindowedSequenceOutgrowsThePool) {
  const WindowModel& m = mistral_model();
  // 6 blocks of 4: 24 positions with every layer kept; the window needs 3 + 1.
  EngineOptions o = options(4, 6, 4, false);
  o.n_ctx = 512;
  const std::vector<WindowJob> jobs{{testing::make_prompt(30, 6), 100, 0}};
  const EngineRun run = run_engine(*m.model, jobs, o);
  EXPECT_LE(run.most_used, 6);
  expect_same_as_alone(m, jobs, run, "outgrows the pool");
}

TEST(SlidingWindowEngineTest, PrefixCacheHitsMatchAlone) {
  // A shared 48-token prefix, then different tails; later arrivals hit.
  const std::vector<int32_t> shared = testing::make_prompt(48, 12);
  std::vector<WindowJob> jobs;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p = shared;
    const std::vector<int32_t> tail = testing::make_prompt(3 + 5 * i, 30 + uint32_t(i));
    p.insert(p.end(), tail.begin(), tail.end());
    jobs.push_back({p, 20, i == 0 ? 0 : 40 + i});
  }
  jobs.push_back({shared, 15, 70});  // the prefix itself: reuses all but its last block
  for (const WindowModel* m : all_models())
    for (const int32_t bs : {4, 8}) {
      const EngineRun run = run_engine(*m->model, jobs, options(bs, 4096 / bs, 512, true));
      EXPECT_GT(run.stats.prefix.tokens_reused, 0) << m->label << ", block " << bs;
      expect_same_as_alone(*m, jobs, run, "prefix hits, block " + std::to_string(bs));
    }
}

TEST(SlidingWindowEngineTest, PrefixCacheUnderEvictionMatchesAlone) {
  // A pool so small that cached blocks are evicted between the requests:
  // whatever is left of a prefix is reused only if its window is complete.
  const std::vector<int32_t> shared = testing::make_prompt(40, 14);
  std::vector<WindowJob> jobs;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> p = shared;
    const std::vector<int32_t> tail = testing::make_prompt(2 + 7 * i, 50 + uint32_t(i));
    p.insert(p.end(), tail.begin(), tail.end());
    jobs.push_back({p, 12, 15 * i});
  }
  for (const WindowModel* m : all_models()) {
    const KvLayerGroups groups = KvLayerGroups::of(m->model->config());
    const int32_t n_blocks = 28 * int32_t(groups.groups.size());
    const EngineRun run = run_engine(*m->model, jobs, options(4, n_blocks, 8, true));
    expect_same_as_alone(*m, jobs, run, "prefix cache under eviction");
  }
}

TEST(SlidingWindowEngineTest, PreemptionMatchesAlone) {
  const std::vector<WindowJob> jobs{{testing::make_prompt(30, 21), 40, 0},
                                    {testing::make_prompt(26, 22), 40, 0},
                                    {testing::make_prompt(33, 23), 40, 0},
                                    {testing::make_prompt(12, 24), 40, 1}};
  for (const WindowModel* m : all_models())
    for (const bool prefix : {false, true}) {
      const KvLayerGroups groups = KvLayerGroups::of(m->model->config());
      int32_t n_full = 0;
      for (const KvLayerGroup& g : groups.groups) n_full += g.window == 0;
      // Enough for one sequence of 73 tokens (19 blocks per full group, 5 per
      // windowed one with chunks of 8), not for four.
      const int32_t n_blocks = n_full * 19 + (int32_t(groups.groups.size()) - n_full) * 5 + 4;
      const EngineRun run = run_engine(*m->model, jobs, options(4, n_blocks, 8, prefix));
      EXPECT_GT(run.stats.preemptions, 0) << m->label;
      expect_same_as_alone(*m, jobs, run, prefix ? "preemption + prefix" : "preemption");
    }
}

}  // namespace
}  // namespace kvforge
