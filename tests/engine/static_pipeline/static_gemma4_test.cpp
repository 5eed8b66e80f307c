// Gemma 4 on the static pipeline: per-layer token embeddings (Embed computes
// every layer's inputs, a LayerTail op per layer adds them), windowed layers
// with their own head size, and a shared-KV tail whose layers keep no K/V
// of their own and attend over their source layer's (a window source's
// staged records and ring, written by the last layer reading them). Static
// logits must equal the dynamic ones (SequenceRunner) bit for bit, on the
// llama.cpp golden files and past the window with chunks longer than it; the
// static cache's bytes count only the layers keeping K/V, as the paged pool
// does (ModelConfig::kv_bytes_per_token). gemma4-double-wide-f32's shared
// layers have FFNs twice as wide (Gemma 4 E2B/E4B's use_double_wide_mlp).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <span>
#include <string>

#include "engine/static_pipeline/plan_executor.h"
#include "engine/static_pipeline/plan_file.h"
#include "engine/static_pipeline/plan_validation.h"
#include "static_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace static_gemma4_test {  // named: the tests build in unity batches

using testing::dynamic_greedy;
using testing::expect_same_traces;
using testing::GreedyTrace;
using testing::static_greedy;
using testing::test_prompt;

// 9 layers (windows of 6 on 0, 1, 3, 4, 6, 7), the last 3 sharing K/V (6
// and 7 read layer 4's, 8 reads layer 5's); full heads of 64, windowed of
// 32, per-layer embeddings of 16.
RandomModelSpec gemma4_spec() {
  RandomModelSpec s = testing::gemma4_test_spec(3, 6);
  s.head_dim = 64;
  s.head_dim_swa = 32;
  s.seed = 7;
  return s;
}

const Model& gemma4_model() {
  static const std::unique_ptr<Model> m = testing::make_test_model(gemma4_spec());
  return *m;
}

// capacity 96 = 64 + 32, chunks of 16 (over the window: a chunk's later
// rows overwrite ring cells its earlier rows read).
StaticConfig long_config(int32_t slots = 1, KvFormat kv = {}) {
  return testing::static_config(64, 32, 16, {32, 64, 96}, slots, kv);
}

// The llama.cpp goldens (tests/model/data/gemma4): a prompt of 17 past the
// window of 8, in chunks of 8, then 30 steps through the variants.
TEST(StaticGemma4, GoldenFilesRunStaticallyWithTheDynamicBits) {
  const auto dir = testing::source_dir() / "tests/model/data/gemma4";
  for (const char* name : {"gemma4-f32.gguf", "gemma4-swa-heads-f32.gguf",
                           "gemma4-double-wide-f32.gguf", "gemma4-kv-heads-f32.gguf"}) {
    SCOPED_TRACE(name);
    const auto model = Model::load(dir / name);
    ASSERT_GT(model->config().n_kv_shared, 0);
    testing::expect_golden_file_runs_statically(*model);
  }
}

TEST(StaticGemma4, SameLogitsBitsAsDynamicThroughChunksWindowsAndVariants) {
  const Model& model = gemma4_model();
  ASSERT_EQ(model.config().kv_source(7), 4);
  ASSERT_EQ(model.config().kv_source(8), 5);
  const StaticConfig config = long_config();
  ThreadPool pool(2);
  StaticRunner runner(model, pool, compile_plans(model, config, 2));
  for (int32_t len : {1, 5, 6, 7, 16, 17, 40, config.max_prompt_len}) {
    SCOPED_TRACE("prompt length " + std::to_string(len));
    const std::vector<int32_t> prompt = test_prompt(size_t(len), len);
    // To the capacity for one prompt, through the variants; 8 steps for the others.
    const int steps = len == 17 ? config.capacity() - len : 8;
    const GreedyTrace want = dynamic_greedy(model, prompt, steps, 2, {}, config.capacity());
    expect_same_traces(static_greedy(runner, 0, prompt, steps), want);
    runner.release(0);
  }
}

// Both slots decode in one generate step each time, with quantized KV.
TEST(StaticGemma4, QuantizedKvAndTwoSlotsEqualDynamic) {
  for (const KvFormat kv :
       {KvFormat{KvDtype::F16, KvDtype::Int8}, KvFormat{KvDtype::Q4, KvDtype::BF16}}) {
    SCOPED_TRACE(kv_dtype_name(kv.k));
    testing::expect_two_slots_equal_dynamic(gemma4_model(), long_config(2, kv), 3,
                                            test_prompt(23, 1), test_prompt(9, 2), 12);
  }
}

// A prefill plan with every row's logits, three chunks of 16 over a window
// of 6: each row of the shared windowed layers (6, 7) reads layer 4's ring
// before its run and its run's staged records, so the rows early in a chunk
// see the positions the chunk's later rows would overwrite. (The last row,
// the only one runs otherwise return, reads only its run.) Every row equals
// the dynamic pass's logits of the whole prompt at once.
TEST(StaticGemma4, EveryRowOfEveryChunkEqualsDynamic) {
  const Model& model = gemma4_model();
  constexpr int32_t kRows = 16, kKv = 64;
  ThreadPool pool(2);
  const Plan plan = compile_plan(model, PlanKind::Prefill, kRows, kKv, kRows, 2);
  PlanExecutor exec(model, one_process_communicator(), plan, 2);
  StaticKvCache cache(model.rank_config(), kKv, 1, KvFormat{});
  std::vector<uint8_t> storage(size_t(plan.arena_bytes) + 64);
  uint8_t* arena = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  MatmulScratch scratch;
  scratch.reserve(plan.matmul_scratch_bytes);
  const std::vector<int32_t> prompt = test_prompt(3 * kRows, 4);
  SequenceRunner dynamic(model, pool, {.n_ctx = kKv, .max_batch = 64, .kv_format = {}});
  const std::span<const float> all = dynamic.prefill(prompt, /*all_logits=*/true);
  const size_t n_vocab = size_t(model.config().n_vocab);
  std::vector<int32_t> positions(kRows), slots(kRows, 0), logit_rows(kRows);
  const std::vector<uint8_t> valid(kRows, 1);
  for (int32_t chunk = 0; chunk < 3; ++chunk) {
    for (int32_t r = 0; r < kRows; ++r) positions[size_t(r)] = chunk * kRows + r;
    std::iota(logit_rows.begin(), logit_rows.end(), 0);
    const std::span<const int32_t> tokens(prompt.data() + chunk * kRows, size_t(kRows));
    const auto logits =
        exec.run({tokens, positions, slots, valid, logit_rows}, cache, arena, scratch, pool);
    for (int32_t r = 0; r < kRows; ++r)
      ASSERT_TRUE(testing::same_bits(logits.subspan(size_t(r) * n_vocab, n_vocab),
                                     all.subspan(size_t(chunk * kRows + r) * n_vocab, n_vocab)))
          << "chunk " << chunk << ", row " << r;
  }
}

// Records per slot: full layers the capacity, windowed layers their ring,
// shared layers nothing. With a window over the capacity every ring is the
// capacity, and a slot position costs exactly the paged pool's bytes per
// token (the layers keeping K/V, each of its own head size).
TEST(StaticGemma4, SharedLayersOwnNoStaticKv) {
  const ModelConfig& c = gemma4_model().config();
  ModelConfig unshared = c;
  unshared.n_kv_shared = 0;
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  const int32_t capacity = 96, slots = 2;
  const size_t mask = size_t(slots) * capacity, n_ring_layers = 4;
  ModelConfig wide = c;  // windows over the capacity: rings of the capacity
  wide.sliding_window = 1000;
  const size_t tags = n_ring_layers * slots * capacity * sizeof(int32_t);
  EXPECT_EQ(StaticKvCache(wide, capacity, slots, f16).bytes(),
            slots * capacity * c.kv_bytes_per_token(2) + mask + tags);
  // Windows of 6: 2 full layers of 2 heads of 64, 4 windowed of 2 heads of 32.
  const size_t per_full = 2 * 2 * kv_head_bytes(KvDtype::F16, 64);
  const size_t per_window = 2 * 2 * kv_head_bytes(KvDtype::F16, 32);
  const size_t ring_tags = n_ring_layers * slots * 6 * sizeof(int32_t);
  const StaticKvCache shared(c, capacity, slots, f16);
  EXPECT_EQ(shared.ring_positions(), 6);
  EXPECT_EQ(shared.bytes(),
            slots * (2 * capacity * per_full + 4 * 6 * per_window) + mask + ring_tags);
  // Unshared, layers 6, 7 (windowed) and 8 (full) would keep their own.
  const size_t unshared_tags = 6 * slots * 6 * sizeof(int32_t);
  EXPECT_EQ(StaticKvCache(unshared, capacity, slots, f16).bytes(),
            slots * (3 * capacity * per_full + 6 * 6 * per_window) + mask + unshared_tags);
  // A shared layer has no records to hand out: plans read its source's.
  StaticKvCache cache(c, capacity, slots, f16);
  std::vector<KvSpan> spans;
  EXPECT_THROW(cache.span(8, 0, 1), std::logic_error);
  EXPECT_THROW(cache.spans(7, 0, 0, 1, spans), std::logic_error);
}

// The plans round-trip through a file; a shared layer's op pointing at
// another layer's K/V than its source's is refused by name.
TEST(StaticGemma4, PlanFileRoundTripAndSharedOperandsChecked) {
  const Model& model = gemma4_model();
  const PlanSet plans = compile_plans(model, long_config(), 1);
  EXPECT_EQ(load_plans(serialize_plans(plans), "mem", model), plans);
  int tails = 0;
  for (const PlanOp& op : plans.prefill.ops) tails += op.code == OpCode::LayerTail;
  EXPECT_EQ(tails, 9);
  const auto refusal = [&](OpCode code, int layer, int operand, uint16_t buffer) -> std::string {
    Plan edited = plans.prefill;
    for (PlanOp& op : edited.ops)
      if (op.code == code && op.layer == layer) op.buffers[size_t(operand)] = buffer;
    try {
      validate_plan(edited, model, 1);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  };
  uint16_t layer3_staged = kNoBuffer, layer8_mask = kNoBuffer;
  for (const PlanOp& op : plans.prefill.ops) {
    if (op.code == OpCode::WindowAttend && op.layer == 3) layer3_staged = op.buffers[3];
    if (op.code == OpCode::Attend && op.layer == 8) {
      layer8_mask = op.buffers[3];
      EXPECT_EQ(op.buffers[1], kNoBuffer) << "a shared full layer writes no K";
    }
  }
  EXPECT_NE(refusal(OpCode::WindowAttend, 7, 3, layer3_staged)
                .find("layer 7 reads the K/V of layer 4, its op's k, v and staged records"),
            std::string::npos);
  uint16_t some_k = kNoBuffer;  // layer 0's k
  for (const PlanOp& op : plans.prefill.ops)
    if (op.code == OpCode::AttentionIn && op.layer == 0) some_k = op.buffers[3];
  EXPECT_NE(refusal(OpCode::Attend, 8, 1, some_k).find("writes none, but has k or v operands"),
            std::string::npos);
  EXPECT_NE(refusal(OpCode::Attend, 5, 1, kNoBuffer).find("layer 5 keeps K/V but writes none"),
            std::string::npos);
  EXPECT_NE(refusal(OpCode::LayerTail, 2, 2, kNoBuffer).find("no per-layer inputs"),
            std::string::npos);
  EXPECT_NE(layer8_mask, kNoBuffer);
}

}  // namespace static_gemma4_test
}  // namespace kvforge
