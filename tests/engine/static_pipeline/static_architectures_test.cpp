// The static pipeline runs every architecture the dynamic engine runs, with
// the same bits: Q/K norms (qwen3, gemma3), the gemma block (scaled
// embeddings, post norms, GELU, soft-capped scores and logits, its query
// scale), a second RoPE table for sliding-window layers (gemma3), the RoPE
// scalings, fused phi3 weights, and sliding windows on a ring of `window`
// positions. Full-attention layers go through the same masked kernel as
// llama's; windowed layers through attend_queries over exactly the window,
// as the dynamic pass reads it; so logits must be equal bit for bit to
// SequenceRunner's, at every prompt length around the chunk and the window
// and through the ring's wrap.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "engine/kv/contiguous_kv_cache.h"
#include "engine/static_pipeline/plan_file.h"
#include "model/forward.h"
#include "static_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::dynamic_greedy;
using testing::expect_same_traces;
using testing::GreedyTrace;
using testing::same_bits;
using testing::static_greedy;
using testing::test_prompt;

struct ArchCase {
  const char* label;
  RandomModelSpec spec;
};

void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.label; }

RandomModelSpec arch_spec(const char* arch, int window = 0, int pattern = 0) {
  RandomModelSpec s = testing::tiny_spec(arch, 17);
  s.sliding_window = window;
  s.swa_pattern = pattern;
  return s;
}

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> cases;
  cases.push_back({"qwen3_head_dim_32", [] {
                     RandomModelSpec s = arch_spec("qwen3");
                     s.head_dim = 32;
                     return s;
                   }()});
  cases.push_back({"gemma2_window_5_softcaps", [] {
                     RandomModelSpec s = arch_spec("gemma2", 5, 2);
                     s.attn_softcap = 50.0f;
                     s.final_softcap = 30.0f;
                     return s;
                   }()});
  cases.push_back({"gemma3_window_8_swa_base", [] {
                     RandomModelSpec s = arch_spec("gemma3", 8, 2);
                     s.n_layer = 3;
                     s.rope_freq_base = 1e6f;
                     s.rope_freq_base_swa = 1e4f;
                     return s;
                   }()});
  cases.push_back({"phi3_fused_window_16", arch_spec("phi3", 16)});
  cases.push_back({"llama_mistral_window_3", arch_spec("llama", 3)});
  cases.push_back({"llama_window_over_capacity", arch_spec("llama", 1000)});
  cases.push_back({"llama3_rope_freqs", [] {
                     RandomModelSpec s = arch_spec("llama");
                     s.llama3_rope_freqs = true;
                     s.rope_orig_ctx = 16;
                     return s;
                   }()});
  cases.push_back({"llama_yarn", [] {
                     RandomModelSpec s = arch_spec("llama");
                     s.rope_scaling = "yarn";
                     s.rope_factor = 4.0f;
                     s.rope_orig_ctx = 16;
                     return s;
                   }()});
  cases.push_back({"qwen3_linear", [] {
                     RandomModelSpec s = arch_spec("qwen3");
                     s.rope_scaling = "linear";
                     s.rope_factor = 2.0f;
                     return s;
                   }()});
  cases.push_back({"phi3_longrope", [] {
                     RandomModelSpec s = arch_spec("phi3");
                     s.longrope_factors = true;
                     s.rope_orig_ctx = 16;
                     return s;
                   }()});
  return cases;
}

// capacity 128 = 96 + 32 ≫ the windows, chunk 16 (larger than most windows:
// a chunk's later rows overwrite the ring cells its earlier rows read).
StaticConfig long_config(int32_t slots = 1, KvFormat kv = {}) {
  return testing::static_config(96, 32, 16, {32, 64, 128}, slots, kv);
}

class StaticArchitectures : public ::testing::TestWithParam<ArchCase> {};

TEST_P(StaticArchitectures, SameLogitsBitsAsDynamicThroughChunksWindowsAndVariants) {
  const auto model = testing::make_test_model(GetParam().spec);
  const StaticConfig config = long_config();
  ThreadPool pool(2);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 2));
  const int32_t w = model->config().sliding_window;
  for (int32_t len : {1, 4, 15, 16, 17, 37, config.max_prompt_len}) {
    SCOPED_TRACE("prompt length " + std::to_string(len) + ", window " + std::to_string(w));
    const std::vector<int32_t> prompt = test_prompt(size_t(len), len);
    // To the capacity for one prompt, through the variants; 12 steps for the others.
    const int steps = len == 37 ? config.capacity() - len : 12;
    const GreedyTrace want = dynamic_greedy(*model, prompt, steps, 2, {}, config.capacity());
    expect_same_traces(static_greedy(runner, 0, prompt, steps), want);
    runner.release(0);
  }
}

// Both slots decode in one generate step each time.
TEST_P(StaticArchitectures, QuantizedKvAndTwoSlotsEqualDynamic) {
  const auto model = testing::make_test_model(GetParam().spec);
  const KvFormat kv{KvDtype::F16, KvDtype::Int8};
  testing::expect_two_slots_equal_dynamic(*model, long_config(2, kv), 3, test_prompt(23, 1),
                                          test_prompt(9, 2), 20);
}

INSTANTIATE_TEST_SUITE_P(Architectures, StaticArchitectures, ::testing::ValuesIn(arch_cases()),
                         [](const auto& param_info) {
                           return std::string(param_info.param.label);
                         });

// The llama.cpp golden files of every architecture and RoPE variant (see
// architecture_golden_test.cpp): static equals dynamic on each, past the
// windows (8) and the original contexts (16), mixtures of experts included.
TEST(StaticArchitectureGoldens, EveryGoldenFileRunsStaticallyWithTheDynamicBits) {
  const auto dir = testing::source_dir() / "tests/model/data/architectures";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().filename().string());
    ++files;
    testing::expect_golden_file_runs_statically(*Model::load(entry.path()));
  }
  EXPECT_GE(files, 8);
}

// The ring: a sliding-window layer's storage is min(window, capacity)
// positions per slot; the full layers keep the capacity.
TEST(StaticRing, WindowLayersCostTheirWindowNotTheCapacity) {
  RandomModelSpec spec = arch_spec("gemma2", 16, 2);  // layers 0, 2: window; 1, 3: full
  spec.n_layer = 4;
  const auto model = testing::make_test_model(spec);
  const ModelConfig& c = model->config();
  ModelConfig no_windows = c;
  no_windows.sliding_window = 0;
  const int32_t capacity = 256, slots = 2;
  const KvFormat kv{KvDtype::F16, KvDtype::F16};
  const StaticKvCache ring(c, capacity, slots, kv);
  const StaticKvCache full(no_windows, capacity, slots, kv);
  const size_t per_position = 2 * size_t(c.n_kv_head) * kv_head_bytes(KvDtype::F16, c.head_dim);
  const size_t mask = size_t(slots) * capacity;
  EXPECT_EQ(full.bytes(), 4 * slots * capacity * per_position + mask);
  EXPECT_EQ(ring.ring_positions(), 16);
  EXPECT_EQ(ring.bytes(), 2 * slots * (capacity + 16) * per_position + mask +
                              2 * slots * 16 * sizeof(int32_t));  // + the cells' position tags
  EXPECT_LT(double(ring.bytes()), 0.54 * double(full.bytes()));
  std::printf(
      "gemma2-shaped, 4 layers (2 windowed, window 16), capacity %d, %d slots, f16: "
      "%zu bytes with the ring, %zu without\n",
      capacity, slots, ring.bytes(), full.bytes());
  // A window over the capacity: the ring is the capacity.
  EXPECT_EQ(StaticKvCache(c, 8, 1, kv).ring_positions(), 8);
}

// K of position p: every value p + 0.5 (f32 records read back exactly).
std::vector<float> marked(const ModelConfig& c, int32_t pos) {
  return std::vector<float>(size_t(c.kv_dim()), float(pos) + 0.5f);
}

float first_value(const KvSpan& s, int32_t i) {
  float x;
  std::memcpy(&x, s.k + size_t(i) * s.k_pos_stride, sizeof x);
  return x;
}

TEST(StaticRing, SpansReturnTheWindowInPositionOrderAcrossTheWrap) {
  const auto model = testing::make_test_model(arch_spec("gemma2", 5, 2));
  const ModelConfig& c = model->config();
  ASSERT_EQ(c.window(0), 5);
  ASSERT_EQ(c.window(1), 0);
  StaticKvCache cache(c, 32, 2, {});
  for (int32_t p = 0; p < 13; ++p)
    for (int l = 0; l < c.n_layer; ++l)
      cache.write(l, 1, p, marked(c, p).data(), marked(c, p).data());
  std::vector<KvSpan> spans;
  cache.spans(0, 1, 8, 13, spans);  // positions 8, 9 in cells 3, 4; 10..12 in cells 0..2
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].n, 2);
  EXPECT_EQ(spans[1].n, 3);
  std::vector<float> seen;
  for (const KvSpan& s : spans)
    for (int32_t i = 0; i < s.n; ++i) seen.push_back(first_value(s, i));
  EXPECT_EQ(seen, (std::vector<float>{8.5f, 9.5f, 10.5f, 11.5f, 12.5f}));
  spans.clear();
  cache.spans(0, 1, 10, 13, spans);  // no wrap: one span
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(first_value(spans[0], 0), 10.5f);
  spans.clear();
  cache.spans(1, 1, 0, 13, spans);  // the full layer holds everything
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(first_value(spans[0], 2), 2.5f);
  // More than the ring, or a position a later one overwrote, is an error.
  EXPECT_THROW(cache.spans(0, 1, 7, 13, spans), std::logic_error);
  EXPECT_THROW(cache.spans(0, 1, 7, 8, spans), std::logic_error) << "cell 2 holds 12";
  EXPECT_TRUE(cache.holds(1, 8, 13));
  EXPECT_FALSE(cache.holds(1, 7, 13));
  // Truncation forgets the cells of the positions it drops.
  cache.truncate(1, 11);
  EXPECT_TRUE(cache.holds(1, 8, 11));
  EXPECT_FALSE(cache.holds(1, 8, 12));
  EXPECT_THROW(cache.span(0, 1, 4), std::logic_error) << "a ring is no span of the capacity";
}

// The dynamic forward pass over the KvStore interface on a ring: decode
// steps read the window through spans(); a multi-token step whose later
// tokens overwrite what its earlier ones read is refused, not wrong.
TEST(StaticRing, ForwardOverTheKvStoreInterfaceEqualsTheContiguousCache) {
  const auto model = testing::make_test_model(arch_spec("gemma2", 4, 2));
  ThreadPool pool(1);
  ForwardScratch scratch(model->config());
  scratch.reserve(8, 1);
  StaticKvCache ring(model->config(), 32, 1, {});
  ContiguousKvCache contiguous(model->config(), 32, {}, 1);
  const auto step = [&](KvStore& kv, std::span<const int32_t> tokens, int32_t start) {
    std::vector<int32_t> positions(tokens.size()), seqs(tokens.size(), 0);
    for (size_t i = 0; i < tokens.size(); ++i) positions[i] = start + int32_t(i);
    const int32_t last = int32_t(tokens.size()) - 1;
    std::vector<float> logits(size_t(model->config().n_vocab));
    forward(*model, {tokens, positions, seqs, {&last, 1}}, kv, scratch, pool, logits.data());
    return logits;
  };
  const std::vector<int32_t> prompt = test_prompt(3);
  std::vector<float> want = step(contiguous, prompt, 0);
  ASSERT_TRUE(same_bits(step(ring, prompt, 0), want));
  for (int32_t pos = 3; pos < 20; ++pos) {
    const int32_t token = testing::argmax(want);
    want = step(contiguous, {&token, 1}, pos);
    ASSERT_TRUE(same_bits(step(ring, {&token, 1}, pos), want)) << "position " << pos;
  }
  EXPECT_THROW(step(ring, test_prompt(6), 20), std::logic_error);
}

// A prefill chunk much longer than the window, with the ring wrapping
// inside the chunk and between chunks, over several slot lengths.
TEST(StaticRing, ChunksAcrossTheWrapEqualDynamic) {
  const auto model = testing::make_test_model(arch_spec("gemma2", 3, 2));
  const StaticConfig config = long_config();
  ThreadPool pool(2);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 2));
  for (int32_t len : {2, 3, 4, 31, 33, 95}) {
    SCOPED_TRACE("prompt length " + std::to_string(len));
    const std::vector<int32_t> prompt = test_prompt(size_t(len), 5);
    const GreedyTrace want = dynamic_greedy(*model, prompt, 20, 2, {}, config.capacity());
    expect_same_traces(static_greedy(runner, 0, prompt, 20), want);
    runner.release(0);
  }
}

TEST(StaticRing, NanInEveryUnusedRingCellChangesNothing) {
  const auto model = testing::make_test_model(arch_spec("gemma2", 6, 2));
  const StaticConfig config = long_config(2, {KvDtype::F16, KvDtype::F16});
  const PlanSet plans = compile_plans(*model, config, 2);
  ThreadPool pool(2);
  StaticRunner clean(*model, pool, plans);
  StaticRunner poisoned(*model, pool, plans);
  testing::static_greedy(poisoned, 0, test_prompt(50, 3), 10);  // leaves stale cells behind
  poisoned.release(0);
  const std::vector<int32_t> prompt = test_prompt(4);
  poisoned.cache().poison_unfilled(0xFF);
  const auto a = clean.prefill(0, prompt);
  std::vector<float> want(a.begin(), a.end());
  ASSERT_TRUE(same_bits(poisoned.prefill(0, prompt), want));
  for (int i = 0; i < 12; ++i) {
    const int32_t token = testing::argmax(want);
    poisoned.cache().poison_unfilled(0xFF);
    const auto x = clean.decode_one(0, token);
    want.assign(x.begin(), x.end());
    ASSERT_TRUE(same_bits(poisoned.decode_one(0, token), want)) << "step " << i;
  }
}

TEST(StaticRing, TruncatingPastWhatTheRingHoldsIsRefused) {
  const auto model = testing::make_test_model(arch_spec("gemma2", 4, 2));
  const StaticConfig config = long_config();
  ThreadPool pool(1);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 1));
  runner.prefill(0, test_prompt(20));
  EXPECT_TRUE(runner.window_intact(0, 20));
  EXPECT_TRUE(runner.window_intact(0, 19)) << "the ring holds [16, 20): position 19 reads 16..18";
  EXPECT_FALSE(runner.window_intact(0, 18)) << "position 18 reads 15, which 19 overwrote";
  EXPECT_THROW(runner.truncate(0, 10), std::logic_error);
  EXPECT_EQ(runner.length(0), 20) << "a refused truncation changes nothing";
  runner.truncate(0, 19);
  const std::vector<int32_t> redo = test_prompt(20);
  const GreedyTrace want = dynamic_greedy(*model, redo, 5, 1, {}, config.capacity());
  std::span<const float> logits = runner.decode_one(0, redo[19]);
  EXPECT_TRUE(same_bits(logits, want.logits[0]));
  runner.release(0);
  EXPECT_TRUE(runner.window_intact(0, 0));
}

// Saved plans carry each layer's window; a plan file of another window
// layout, or of the version before windows, is refused by name.
TEST(StaticRingPlanFile, WindowsRoundTripAndStalePlansAreRefused) {
  const auto model = testing::make_test_model(arch_spec("gemma2", 5, 2));
  const PlanSet plans = compile_plans(*model, long_config(), 1);
  EXPECT_EQ(plans.layer_windows, (std::vector<int32_t>{5, 0}));
  const std::vector<uint8_t> bytes = serialize_plans(plans);
  EXPECT_EQ(load_plans(bytes, "mem", *model), plans);
  const auto error = [&](std::span<const uint8_t> b) -> std::string {
    try {
      load_plans(b, "test.kvfplan", *model);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  };
  std::vector<uint8_t> v1 = bytes;
  v1[8] = 1;
  const std::string expected = "(expected " + std::to_string(kPlanFileVersion) + ")";
  EXPECT_NE(error(v1).find("version 1 is not supported " + expected), std::string::npos)
      << error(v1);
  std::vector<uint8_t> v2 = bytes;  // the fine-grained ops before the plan recorded the walk
  v2[8] = 2;
  EXPECT_NE(error(v2).find("version 2 is not supported " + expected), std::string::npos)
      << error(v2);
  PlanSet edited = plans;
  edited.layer_windows[0] = 4;
  EXPECT_NE(error(serialize_plans(edited)).find("layer 0 window 4 in the plans, 5 in the model"),
            std::string::npos);
  edited = plans;
  for (PlanOp& op : edited.prefill.ops)
    if (op.code == OpCode::WindowAttend) op.layer = 1;
  EXPECT_NE(error(serialize_plans(edited)).find("layer 1 has full attention"), std::string::npos)
      << error(serialize_plans(edited));
}

}  // namespace
}  // namespace kvforge
