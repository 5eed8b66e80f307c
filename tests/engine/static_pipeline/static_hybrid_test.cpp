// Hybrid models (qwen35, qwen35moe, qwen3next) on the static pipeline: the
// Gated DeltaNet layers as one plan op over the valid rows, each slot's
// recurrent state pre-allocated in the static cache beside its KV; the full
// layers' gated attention with its output gate buffer. Static logits equal
// the dynamic ones bit for bit (llama.cpp golden files, chunked prefill, two
// slots with a padding row); a slot is reused for a later prompt only when
// that prompt continues all of it (a state cannot be cut back), and a
// context shift is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include "engine/static_pipeline/plan_file.h"
#include "engine_test_util.h"
#include "static_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::dynamic_greedy;
using testing::GreedyTrace;
using testing::same_bits;
using testing::test_prompt;

// Layers 0-2 Gated DeltaNet, 3 full gated attention; conv window 4, chunks of 8.
RandomModelSpec qwen35_spec(const char* arch = "qwen35") {
  RandomModelSpec spec = testing::tiny_spec(arch, 23);
  spec.n_layer = 4;
  spec.head_dim = 32;
  return spec;
}

// The llama.cpp golden files (data/hybrid): 8 layers of each architecture, a
// prompt of 17 in chunks of 8 (past the conv window), then to the capacity.
TEST(StaticHybrid, GoldenFilesRunStaticallyWithTheDynamicBits) {
  const auto dir = testing::source_dir() / "tests/model/data/hybrid";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().filename().string());
    ++files;
    const auto model = Model::load(entry.path());
    ASSERT_TRUE(model->config().hybrid());
    testing::expect_golden_file_runs_statically(*model);
  }
  EXPECT_EQ(files, 4);  // qwen35 (two shapes), qwen35moe, qwen3next
}

// Two slots decode together; between their prefills slot 1 is a padding row
// of the generate plan, whose state must not move.
TEST(StaticHybrid, TwoSlotsWithQuantizedKvEqualDynamic) {
  for (const char* arch : {"qwen35", "qwen3next"}) {
    SCOPED_TRACE(arch);
    const auto model = testing::make_test_model(qwen35_spec(arch));
    const KvFormat kv{KvDtype::F16, KvDtype::Int8};
    const StaticConfig config = testing::small_static_config(2, kv);
    ThreadPool pool(3);
    StaticRunner runner(*model, pool, compile_plans(*model, config, 3));
    const std::vector<int32_t> a = test_prompt(21, 1), b = test_prompt(7, 2);
    const GreedyTrace want_a = dynamic_greedy(*model, a, 10, 3, kv, config.capacity());
    const GreedyTrace want_b = dynamic_greedy(*model, b, 10, 3, kv, config.capacity());
    std::vector<int32_t> ta{testing::argmax(runner.prefill(0, a))};
    const size_t n_vocab = size_t(model->config().n_vocab);
    ASSERT_TRUE(same_bits(runner.decode_one(0, ta.back()), want_a.logits[1]));
    ta.push_back(testing::argmax(std::span<const float>(want_a.logits[1])));
    std::vector<int32_t> tb{testing::argmax(runner.prefill(1, b))};
    for (int i = 1; i < 10; ++i) {
      const std::vector<int32_t> step = {ta.back(), tb.back()};
      const std::span<const float> logits = runner.decode(step);
      ASSERT_TRUE(same_bits(logits.first(n_vocab), want_a.logits[size_t(i) + 1])) << i;
      ASSERT_TRUE(same_bits(logits.subspan(n_vocab, n_vocab), want_b.logits[size_t(i)])) << i;
      ta.push_back(testing::argmax(logits.first(n_vocab)));
      tb.push_back(testing::argmax(logits.subspan(n_vocab, n_vocab)));
    }
    EXPECT_EQ(ta, want_a.tokens);
    EXPECT_EQ(tb, std::vector<int32_t>(want_b.tokens.begin(), want_b.tokens.begin() + 10));
  }
}

// The states are the cache's, one per slot and linear layer; cutting a slot
// back would need the states of an earlier position, which are gone.
TEST(StaticHybrid, StatesArePreallocatedAndCannotBeCutBack) {
  const auto model = testing::make_test_model(qwen35_spec());
  const StaticConfig config = testing::small_static_config(2);
  ThreadPool pool(1);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 1));
  const ModelConfig& c = model->config();
  EXPECT_EQ(runner.cache().state_bytes_per_slot(), c.state_bytes_per_sequence());
  ModelConfig dense = c;  // the same cache without the linear layers' states and K/V
  dense.recurrent_layers.clear();
  dense.n_layer = 1;
  EXPECT_EQ(runner.cache().bytes(), StaticKvCache(dense, config.capacity(), 2, {}).bytes() +
                                        2 * c.state_bytes_per_sequence());
  runner.prefill(0, test_prompt(12));
  EXPECT_TRUE(runner.state_intact(0, 12));
  EXPECT_FALSE(runner.state_intact(0, 5));
  EXPECT_THROW(runner.truncate(0, 5), std::logic_error);
  EXPECT_THROW(runner.shift(0, 1, 4), std::logic_error);
  runner.release(0);  // 0: a restart
  EXPECT_EQ(runner.length(0), 0);
}

// A plan file cannot put a linear-attention op on an attention layer nor
// drop the output gate of gated attention.
TEST(StaticHybrid, PlanFilesKeepEachLayersKind) {
  const auto model = testing::make_test_model(qwen35_spec());
  const PlanSet plans = compile_plans(*model, testing::small_static_config(), 1);
  EXPECT_EQ(load_plans(serialize_plans(plans), "mem", *model), plans);
  const auto error = [&](const std::function<void(Plan&)>& edit) -> std::string {
    PlanSet edited = plans;
    edit(edited.prefill);
    try {
      load_plans(serialize_plans(edited), "edited.kvfplan", *model);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  };
  const auto first = [](Plan& p, OpCode code) -> PlanOp& {
    return *std::find_if(p.ops.begin(), p.ops.end(),
                         [&](const PlanOp& op) { return op.code == code; });
  };
  EXPECT_NE(error([&](Plan& p) {
              first(p, OpCode::LinearAttention).layer = 3;
            }).find("layer 3 is an attention layer"),
            std::string::npos);
  EXPECT_NE(error([&](Plan& p) {
              first(p, OpCode::AttentionIn).buffers[5] = kNoBuffer;
            }).find("no output gate for a model with gated attention"),
            std::string::npos);
}

std::unique_ptr<Engine> static_engine(const Model& model, ThreadPool& pool,
                                      testing::EngineRecorder& rec, EngineOptions o) {
  o.reuse_slots = true;
  return std::make_unique<Engine>(
      model, pool, compile_plans(model, testing::small_static_config(1), 1), rec.hook(o));
}

testing::Trace run(Engine& e, testing::EngineRecorder& rec, std::span<const int32_t> prompt,
                   int n) {
  const RequestId id = e.add_request(prompt, testing::greedy(n));
  while (e.has_unfinished()) rec.record(e.step());
  return rec.at(id, 0);
}

// reuse_slots: a prompt that continues the whole slot reuses it (its states
// are exactly those positions'); one that shares only part of it does not.
// Either way the logits are the cold run's, bit for bit.
TEST(StaticHybrid, SlotReuseOnlyWhereTheStatesHoldTheWholePrefix) {
  const auto model = testing::make_test_model(qwen35_spec());
  ThreadPool pool(1);
  testing::EngineRecorder rec;
  const std::unique_ptr<Engine> e = static_engine(*model, pool, rec, {});
  const std::vector<int32_t> first = testing::make_prompt(12, 4);
  const testing::Trace t1 = run(*e, rec, first, 6);
  // The slot computed the prompt and the first 5 replies (the 6th was never fed back).
  std::vector<int32_t> whole = first;
  whole.insert(whole.end(), t1.tokens.begin(), t1.tokens.begin() + 5);
  whole.push_back(7);
  const int64_t before = e->stats().prefix.tokens_reused;
  const testing::Trace t2 = run(*e, rec, whole, 4);
  EXPECT_EQ(e->stats().prefix.tokens_reused - before, 17);
  std::vector<int32_t> part(whole.begin(), whole.begin() + 8);
  part.push_back(9);
  const testing::Trace t3 = run(*e, rec, part, 4);
  EXPECT_EQ(e->stats().prefix.tokens_reused - before, 17) << "a cut-back slot was reused";
  for (const auto& [prompt, got] : {std::pair{&whole, &t2}, std::pair{&part, &t3}}) {
    const testing::Trace cold = testing::run_alone(*model, *prompt, 4);
    EXPECT_EQ(got->tokens, cold.tokens);
    ASSERT_EQ(got->logits.size(), cold.logits.size());
    for (size_t i = 0; i < cold.logits.size(); ++i) EXPECT_EQ(got->logits[i], cold.logits[i]) << i;
  }
}

TEST(StaticHybrid, ContextShiftIsRefusedByName) {
  const auto model = testing::make_test_model(qwen35_spec());
  ThreadPool pool(1);
  testing::EngineRecorder rec;
  EngineOptions o;
  o.context_shift = true;
  o.n_keep = 1;
  try {
    static_engine(*model, pool, rec, o);
    FAIL() << "a hybrid model's static slots shift";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("hybrid models (a recurrent state cannot drop tokens)"),
              std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace kvforge
