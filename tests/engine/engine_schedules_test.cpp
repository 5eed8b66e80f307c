// "One function, many schedules": for greedy decoding every request's tokens
// AND the logits they were sampled from are bit-identical to the request run
// alone through SequenceRunner (contiguous cache, whole prompt in one pass),
// whatever the block size, prefill chunk size, number of neighbours,
// arrival times, prefix-cache hits, preemption with recompute, or thread
// count, and for a hybrid model prefix hits restored from the disk tier
// in a new engine (K/V blocks and recurrent-state snapshots). This holds because the forward
// kernels are row-wise (a token's row never depends on the other rows of the step) and attention
// tiles are cut at absolute positions (block boundaries do not change the summation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "core/cpu_features.h"
#include "core/kernels/weight_repack.h"
#include "engine/kv/kv_layer_groups.h"
#include "engine_test_util.h"
#include "temp_dir.h"

namespace kvforge {
namespace {

using testing::EngineRecorder;
using testing::Trace;

struct Schedule {
  const char* label;
  int32_t block_size;
  int32_t kv_blocks;  // 0 = plenty
  int32_t max_batched_tokens;
  int32_t max_seqs;
  int threads;
  bool prefix_cache;
  bool expect_preemption;
};

std::ostream& operator<<(std::ostream& os, const Schedule& s) { return os << s.label; }

struct Job {
  std::vector<int32_t> prompt;
  int max_tokens;
  int arrive_at_step;
};

// Prompts of several lengths; three share a 40-token prefix (prefix-cache
// hits once the first is computed), one repeats another exactly.
std::vector<Job> make_jobs() {
  const std::vector<int32_t> shared = testing::make_prompt(40, 99);
  std::vector<Job> jobs;
  auto with_shared = [&](int extra, uint32_t seed) {
    std::vector<int32_t> p = shared;
    const auto tail = testing::make_prompt(extra, seed);
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  jobs.push_back({testing::make_prompt(7, 1), 14, 0});
  jobs.push_back({with_shared(5, 2), 12, 0});
  jobs.push_back({testing::make_prompt(33, 3), 10, 0});
  jobs.push_back({with_shared(9, 4), 16, 2});
  jobs.push_back({testing::make_prompt(1, 5), 9, 3});
  jobs.push_back({with_shared(0, 6), 11, 5});
  jobs.push_back({testing::make_prompt(33, 3), 10, 6});
  jobs.push_back({testing::make_prompt(64, 7), 8, 9});
  return jobs;
}

// One model, its jobs and each job's trace run alone.
struct Workload {
  std::unique_ptr<Model> model;
  std::vector<Job> jobs;
  std::vector<Trace> alone;

  explicit Workload(GgmlType weights) : Workload(testing::make_engine_test_model(weights)) {}
  explicit Workload(std::unique_ptr<Model> m) : model(std::move(m)), jobs(make_jobs()) {
    for (const Job& j : jobs) alone.push_back(testing::run_alone(*model, j.prompt, j.max_tokens));
  }
  // Prefix-cache hits are expected on the shared prompts unless every layer
  // has a window (then the blocks a reuse would start from are released).
  bool expect_prefix_hits = true;
};

// disk_dir, snapshots: the disk tier and a hybrid model's state snapshots
// (off by default); `stats`: where the engine's stats at the end go.
void check_schedule(const Workload& w, const Schedule& s, const std::string& disk_dir = "",
                    int32_t snapshots = 0, EngineStats* stats = nullptr) {
  ThreadPool pool(s.threads);
  EngineOptions o;
  o.kv_disk_dir = disk_dir;
  o.state_snapshots = snapshots;
  o.block_size = s.block_size;
  o.kv_blocks = s.kv_blocks > 0 ? s.kv_blocks : 4096 / s.block_size;
  o.max_batched_tokens = s.max_batched_tokens;
  o.max_seqs = s.max_seqs;
  o.enable_prefix_cache = s.prefix_cache;
  EngineRecorder rec;
  Engine engine(*w.model, pool, rec.hook(o));
  const int32_t initial_free = engine.stats().kv_blocks_free;
  ASSERT_EQ(initial_free, engine.n_blocks());

  std::vector<RequestId> ids(w.jobs.size(), -1);
  int step = 0;
  size_t added = 0;
  while (added < w.jobs.size() || engine.has_unfinished()) {
    for (size_t i = 0; i < w.jobs.size(); ++i)
      if (ids[i] < 0 && w.jobs[i].arrive_at_step <= step) {
        ids[i] = engine.add_request(w.jobs[i].prompt, testing::greedy(w.jobs[i].max_tokens));
        ++added;
      }
    rec.record(engine.step());
    ASSERT_LT(++step, 2000) << "no progress";
  }

  for (size_t i = 0; i < w.jobs.size(); ++i) {
    const Trace& want = w.alone[i];
    const Trace& got = rec.traces[{ids[i], 0}];
    ASSERT_EQ(got.tokens, want.tokens) << "request " << i;
    ASSERT_EQ(got.finish, FinishReason::Length) << "request " << i;
    // Recompute after preemption samples again only at the end, so every
    // generated token was sampled from exactly one logits row.
    ASSERT_EQ(got.logits.size(), want.logits.size()) << "request " << i;
    for (size_t k = 0; k < want.logits.size(); ++k)
      ASSERT_EQ(0, std::memcmp(got.logits[k].data(), want.logits[k].data(),
                               want.logits[k].size() * sizeof(float)))
          << "request " << i << " token " << k << ": logits differ in bits";
  }
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.kv_blocks_free, initial_free) << "blocks leaked";
  EXPECT_EQ(st.running + st.waiting, 0);
  if (s.expect_preemption) {
    EXPECT_GT(st.preemptions, 0) << "the pool was meant to force preemption";
  }
  if (s.prefix_cache && s.kv_blocks == 0 && s.block_size <= 16 && w.expect_prefix_hits) {
    EXPECT_GT(st.prefix.tokens_reused, 0) << "shared prompts should hit the prefix cache";
  }
  if (!s.prefix_cache || (w.model->config().hybrid() && snapshots == 0)) {
    EXPECT_EQ(st.prefix.tokens_reused, 0) << "a hybrid model's K/V comes back only with its state";
  }
  if (stats) *stats = st;
}

class EngineSchedulesTest : public ::testing::TestWithParam<Schedule> {};

TEST_P(EngineSchedulesTest, GreedyTokensAndLogitsAreThoseOfTheSequenceRunAlone) {
  static const Workload f32(GgmlType::F32);  // built once for every schedule
  check_schedule(f32, GetParam());
}

// The same with Q8_0 and with Q4_0 weights: on an AVX-512 machine with AMX
// the layer matrices take the Tiles16 layouts, so steps of 4+ tokens run on
// AMX and decodes and 1-3-token chunks on the VNNI kernel, which must agree
// bitwise.
class EngineSchedulesQ8Test : public ::testing::TestWithParam<Schedule> {};
class EngineSchedulesQ4Test : public ::testing::TestWithParam<Schedule> {};

// `layout`: what the layer matrices must have been loaded in where `here`
// (the machine and level take the layout); elsewhere they are in another
// one, and the schedules still must not matter.
void check_layout_schedule(const Workload& w, WeightLayout layout, bool here, const Schedule& s) {
  if (here) {
    ASSERT_EQ(w.model->weights().layers[0].ffn_up.layout, layout);
  }
  check_schedule(w, s);
}

TEST_P(EngineSchedulesQ8Test, GreedyTokensAndLogitsAreThoseOfTheSequenceRunAlone) {
  static const Workload q8(GgmlType::Q8_0);
  check_layout_schedule(q8, WeightLayout::Q8_0Tiles16, amx_int8_usable(), GetParam());
}

TEST_P(EngineSchedulesQ4Test, GreedyTokensAndLogitsAreThoseOfTheSequenceRunAlone) {
  static const Workload q4(GgmlType::Q4_0);
  check_layout_schedule(q4, WeightLayout::Q4_0Tiles16, amx_int8_usable(), GetParam());
}

// And with F16 and BF16 weights: at the AVX-512 level their matrices take
// the Interleaved16 layouts, whose decode and batch tiles must agree bitwise.
class EngineSchedulesF16Test : public ::testing::TestWithParam<Schedule> {};
class EngineSchedulesBF16Test : public ::testing::TestWithParam<Schedule> {};

TEST_P(EngineSchedulesF16Test, GreedyTokensAndLogitsAreThoseOfTheSequenceRunAlone) {
  static const Workload f16(GgmlType::F16);
  check_layout_schedule(f16, WeightLayout::F16Interleaved16, regrouping_preferred(), GetParam());
}

TEST_P(EngineSchedulesBF16Test, GreedyTokensAndLogitsAreThoseOfTheSequenceRunAlone) {
  static const Workload bf16(GgmlType::BF16);
  check_layout_schedule(bf16, WeightLayout::BF16Interleaved16, regrouping_preferred(), GetParam());
}

// Every architecture: the same schedules on a tiny model of each, windows of
// 6 positions (far below the prompts) where the architecture has them.
struct ArchCase {
  const char* label;
  const char* arch;
  int sliding_window;
  int head_dim;
  const char* rope_scaling;
  bool llama3_rope_freqs;
  bool gemma4_moe = false;  // gemma4's MoE variant (RandomModelSpec::gemma4_moe)
};

std::ostream& operator<<(std::ostream& os, const ArchCase& a) { return os << a.label; }

const ArchCase kArchCases[] = {
    {"llama3_rope_freqs", "llama", 0, 0, "", true},
    {"mistral_window6", "llama", 6, 0, "", false},
    {"qwen3_yarn_head32", "qwen3", 0, 32, "yarn", false},
    {"gemma2_window6", "gemma2", 6, 0, "", false},
    {"gemma3_window6_linear", "gemma3", 6, 0, "linear", false},
    {"phi3_longrope", "phi3", 0, 0, "", false},
    // 8 experts, 2 per token: steps group their tokens by expert in runs of
    // every size (model/moe_ffn.h), a decode's experts one token each.
    {"qwen3moe_8x2", "qwen3moe", 0, 32, "", false},
    // gpt-oss: sinks, biases, 8 experts of clamped SwiGLU with 2 per token,
    // YaRN, windows of 6 on the even layers.
    {"gpt_oss_window6", "gpt-oss", 6, 32, "yarn", false},
    // Hybrid: 8 layers, every 4th full gated attention, the others Gated
    // DeltaNet whose per-sequence state the engine's state pool holds.
    {"qwen35_hybrid", "qwen35", 0, 32, "", false},
    // The hybrid mixtures: qwen35's layers with 8 experts (2 per token) and a
    // shared expert; qwen3next's grouped value heads.
    {"qwen35moe_hybrid", "qwen35moe", 0, 32, "", false},
    {"qwen3next_hybrid", "qwen3next", 0, 32, "", false},
    // Gemma 4: 9 layers (windows of 6 on six, pattern 3), the last 3 reading
    // layers 4 and 5's K/V and holding no blocks, their FFNs double wide (as
    // E2B/E4B's), per-layer embeddings.
    {"gemma4_shared_kv", "gemma4", 6, 32, "", false},
    // Its MoE variant: the same layers with 8 experts (2 per token) beside
    // each dense FFN, routed on their own input.
    {"gemma4_moe_shared_kv", "gemma4", 6, 32, "", false, true},
};

const Workload& arch_workload(const ArchCase& a) {
  static std::map<std::string, std::unique_ptr<Workload>> built;  // one per case, all schedules
  std::unique_ptr<Workload>& w = built[a.label];
  if (!w) {
    RandomModelSpec spec;
    spec.name = a.label;
    spec.arch = a.arch;
    spec.n_ctx = 256;
    spec.seed = 11;
    spec.sliding_window = a.sliding_window;
    spec.head_dim = a.head_dim;
    spec.rope_scaling = a.rope_scaling;
    if (!spec.rope_scaling.empty()) {
      spec.rope_factor = 4;
      spec.rope_orig_ctx = 64;
    }
    spec.llama3_rope_freqs = a.llama3_rope_freqs;
    spec.gemma4_moe = a.gemma4_moe;
    spec.longrope_factors = std::string(a.arch) == "phi3";
    if (spec.longrope_factors) spec.rope_orig_ctx = 64;
    if (spec.arch == "qwen35" || spec.arch == "qwen35moe" || spec.arch == "qwen3next")
      spec.n_layer = 8;
    if (spec.arch == "gemma4") {
      spec.n_layer = 9;
      spec.swa_pattern = 3;
      spec.n_kv_shared = 3;
      spec.double_wide_ffn = !a.gemma4_moe;
    }
    w = std::make_unique<Workload>(testing::make_test_model(spec));
    const ModelConfig& c = w->model->config();
    // Hybrid models reuse no prefix (kv/hybrid_kv_manager.h).
    w->expect_prefix_hits = !c.hybrid() && (c.sliding_window == 0 ||
                                            std::any_of(c.swa_layers.begin(), c.swa_layers.end(),
                                                        [](uint8_t s) { return !s; }));
  }
  return *w;
}

class EngineSchedulesArchTest : public ::testing::TestWithParam<std::tuple<ArchCase, Schedule>> {};

TEST_P(EngineSchedulesArchTest, GreedyTokensAndLogitsAreThoseOfTheSequenceRunAlone) {
  const auto& [arch, schedule] = GetParam();
  const Workload& w = arch_workload(arch);
  // A block holds one layer group's share of the layers: a pool meant to hold
  // the longest request alone needs that many times the blocks.
  Schedule s = schedule;
  s.kv_blocks *= int32_t(KvLayerGroups::of(w.model->config()).groups.size());
  check_schedule(w, s);
}

// A hybrid model's prefix hits from disk: one engine writes the workload's
// blocks and snapshots through, a new one on the same directory (as after
// a restart) restores them, alone and chunked.
TEST(EngineSchedulesHybridDisk, PrefixHitsFromDiskAreTheRunAlone) {
  const Workload& w = arch_workload(kArchCases[8]);
  ASSERT_STREQ(kArchCases[8].arch, "qwen35");
  for (const Schedule& s : {Schedule{"bs16_budget512_t2", 16, 0, 512, 64, 2, true, false},
                            Schedule{"bs16_chunk3_t2", 16, 0, 3, 64, 2, true, false}}) {
    SCOPED_TRACE(s.label);
    testing::TempDir dir("kvforge-schedules-disk");
    EngineStats first, restarted;
    check_schedule(w, s, dir.path.string(), 4, &first);
    EXPECT_GT(first.disk.states_stored, 0);
    check_schedule(w, s, dir.path.string(), 4, &restarted);
    EXPECT_GT(restarted.disk.state_hits, 0) << "prefixes restored from disk";
    EXPECT_EQ(restarted.disk.files_rejected, 0);
  }
}

// kv_blocks for the preemption cases: the longest request (64 + 8 tokens)
// fits alone, but not beside many others.
INSTANTIATE_TEST_SUITE_P(
    Schedules, EngineSchedulesTest,
    ::testing::Values(Schedule{"bs16_budget512_t1", 16, 0, 512, 64, 1, true, false},
                      Schedule{"bs1_budget512_t2", 1, 0, 512, 64, 2, true, false},
                      Schedule{"bs256_budget512_t3", 256, 0, 512, 64, 3, true, false},
                      Schedule{"bs16_chunk3_t2", 16, 0, 3, 64, 2, true, false},
                      Schedule{"bs4_chunk7_noprefix_t1", 4, 0, 7, 64, 1, false, false},
                      Schedule{"bs16_maxseqs2_t3", 16, 0, 512, 2, 3, true, false},
                      Schedule{"bs4_pool20_preempt_t1", 4, 20, 512, 64, 1, true, true},
                      Schedule{"bs1_pool80_chunk5_preempt_t2", 1, 80, 5, 64, 2, false, true},
                      Schedule{"bs16_pool5_preempt_t3", 16, 5, 17, 64, 3, true, true}),
    [](const auto& p) { return std::string(p.param.label); });

const Schedule kQuantizedSchedules[] = {
    Schedule{"bs16_budget512_t2", 16, 0, 512, 64, 2, true, false},
    Schedule{"bs16_chunk3_t2", 16, 0, 3, 64, 2, true, false},
    Schedule{"bs4_chunk7_noprefix_t3", 4, 0, 7, 64, 3, false, false},
    Schedule{"bs16_pool5_preempt_t3", 16, 5, 17, 64, 3, true, true}};

INSTANTIATE_TEST_SUITE_P(Schedules, EngineSchedulesQ8Test, ::testing::ValuesIn(kQuantizedSchedules),
                         [](const auto& p) { return std::string(p.param.label); });
INSTANTIATE_TEST_SUITE_P(Schedules, EngineSchedulesQ4Test, ::testing::ValuesIn(kQuantizedSchedules),
                         [](const auto& p) { return std::string(p.param.label); });
INSTANTIATE_TEST_SUITE_P(Schedules, EngineSchedulesArchTest,
                         ::testing::Combine(::testing::ValuesIn(kArchCases),
                                            ::testing::ValuesIn(kQuantizedSchedules)),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param).label) + "_" +
                                  std::get<1>(p.param).label;
                         });
INSTANTIATE_TEST_SUITE_P(Schedules, EngineSchedulesF16Test,
                         ::testing::ValuesIn(kQuantizedSchedules),
                         [](const auto& p) { return std::string(p.param.label); });
INSTANTIATE_TEST_SUITE_P(Schedules, EngineSchedulesBF16Test,
                         ::testing::ValuesIn(kQuantizedSchedules),
                         [](const auto& p) { return std::string(p.param.label); });

}  // namespace
}  // namespace kvforge
