// The static pipeline records the mixture-of-experts FFN as one op that runs
// the forward pass's own moe_ffn (model/moe_ffn.h) over the step's valid rows
// (padding rows pick no experts), and a token's experts and sums depend on
// its row alone, so static logits equal the dynamic ones bit for bit through
// chunked prefill, the generate variants and two slots.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/plan_executor.h"
#include "engine/static_pipeline/plan_file.h"
#include "engine/static_pipeline/plan_validation.h"
#include "model/forward_steps.h"
#include "static_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::dynamic_greedy;
using testing::expect_same_traces;
using testing::GreedyTrace;
using testing::static_greedy;
using testing::test_prompt;

// 8 experts, 2 picked: a chunk of 8 rows reaches most experts with uneven counts.
std::unique_ptr<Model> qwen3moe() { return testing::make_moe_test_model(8, 2, 32, 17); }

// Static logits equal the dynamic ones through chunks of 8 and the variants.
void expect_prompts_run_as_dynamic(const Model& model) {
  const StaticConfig config = testing::small_static_config();
  ThreadPool pool(2);
  StaticRunner runner(model, pool, compile_plans(model, config, 2));
  for (int32_t len : {1, 9, 23}) {  // one row, past one chunk, three chunks (the last padded)
    SCOPED_TRACE("prompt length " + std::to_string(len));
    const std::vector<int32_t> prompt = test_prompt(size_t(len), len);
    const int steps = len == 23 ? config.capacity() - len : 6;  // 23: through every variant
    const GreedyTrace want = dynamic_greedy(model, prompt, steps, 2, {}, config.capacity());
    expect_same_traces(static_greedy(runner, 0, prompt, steps), want);
    runner.release(0);
  }
}

TEST(StaticMoe, Qwen3MoeSameLogitsBitsAsDynamicThroughChunksAndVariants) {
  expect_prompts_run_as_dynamic(*qwen3moe());
}

// Two slots in one generate step (and an idle padding row between prefills).
// One generate step of 4 rows with the token on `row` and padding elsewhere:
// that row's logits, and how many tokens the experts saw.
struct OneRowStep {
  std::vector<float> logits;
  int64_t moe_tokens = 0;
};
OneRowStep generate_on_row(const Model& model, int32_t row, int32_t n_valid_rows) {
  constexpr int32_t kRows = 4, kKv = 16;
  ThreadPool pool(2);
  const Plan plan = compile_plan(model, PlanKind::Generate, kRows, kKv, kRows, 2);
  PlanExecutor exec(model, one_process_communicator(), plan, 2);
  StaticKvCache cache(model.rank_config(), kKv, kRows, KvFormat{});
  std::vector<uint8_t> storage(size_t(plan.arena_bytes) + 64);
  uint8_t* arena = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  MatmulScratch scratch;
  scratch.reserve(plan.matmul_scratch_bytes);
  std::vector<int32_t> tokens(kRows, 0), positions(kRows, 0), slots{0, 1, 2, 3},
      logit_rows{0, 1, 2, 3};
  std::vector<uint8_t> valid(kRows, 0);
  tokens[size_t(row)] = 7;
  for (int32_t r = 0; r < n_valid_rows; ++r) valid[size_t((row + r) % kRows)] = 1;
  const auto logits =
      exec.run({tokens, positions, slots, valid, logit_rows}, cache, arena, scratch, pool);
  const size_t n_vocab = size_t(model.config().n_vocab);
  return {{logits.begin() + row * n_vocab, logits.begin() + (row + 1) * n_vocab},
          exec.last_moe_tokens()};
}

// Padding rows route to no expert (a decode step with idle slots reads only
// the experts its real tokens pick), and the real token's logits are the same
// bits wherever its row is among the padding.
TEST(StaticMoe, PaddingRowsPickNoExpertsAndMoveNoBits) {
  const auto model = qwen3moe();
  const OneRowStep first = generate_on_row(*model, 0, 1);
  const OneRowStep third = generate_on_row(*model, 2, 1);
  EXPECT_EQ(first.moe_tokens, 1);
  EXPECT_EQ(third.moe_tokens, 1);
  ASSERT_EQ(first.logits.size(), third.logits.size());
  EXPECT_EQ(
      std::memcmp(first.logits.data(), third.logits.data(), first.logits.size() * sizeof(float)),
      0);
  const OneRowStep full = generate_on_row(*model, 0, 4);
  EXPECT_EQ(full.moe_tokens, 4);
  EXPECT_EQ(
      std::memcmp(first.logits.data(), full.logits.data(), first.logits.size() * sizeof(float)), 0);
}

TEST(StaticMoe, TwoSlotsWithQuantizedKvEqualDynamic) {
  const auto model = qwen3moe();
  const KvFormat kv{KvDtype::F16, KvDtype::Int8};
  testing::expect_two_slots_equal_dynamic(*model, testing::small_static_config(2, kv), 3,
                                          test_prompt(13, 1), test_prompt(6, 2), 8);
}

// Gemma 4's MoE variant (model/gemma4_moe.h): its experts run beside the
// dense FFN, routed on their own input. The tiny gemma4 (9 layers, windows of
// 6 on six of them, the last 3 reading earlier layers' K/V, per-layer
// embeddings) with 8 experts, 2 per token, in every layer.
std::unique_ptr<Model> gemma4_moe() {
  RandomModelSpec spec = testing::gemma4_test_spec(3, 6);
  spec.gemma4_moe = true;
  spec.seed = 19;
  return testing::make_test_model(spec);
}

// Prompts past the window (one row, a chunk of 8 and a bit over windows of
// 6, three chunks with the last padded), then through the variants.
TEST(StaticMoe, Gemma4MoeSameLogitsBitsAsDynamicThroughChunksWindowsAndVariants) {
  const auto model = gemma4_moe();
  ASSERT_TRUE(model->config().experts_beside_ffn());
  ASSERT_GT(model->config().n_kv_shared, 0);
  expect_prompts_run_as_dynamic(*model);
}

// The llama.cpp golden files (tests/model/data/gemma4): f32 and the
// llama-quantize'd ones, past their window of 8.
TEST(StaticMoe, Gemma4MoeGoldenFilesRunStaticallyWithTheDynamicBits) {
  const auto dir = testing::source_dir() / "tests/model/data/gemma4";
  for (const char* name :
       {"gemma4-moe-f32.gguf", "gemma4-moe-q8_0.gguf", "gemma4-moe-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    const auto model = Model::load(dir / name);
    ASSERT_TRUE(model->config().experts_beside_ffn());
    testing::expect_golden_file_runs_statically(*model);
  }
}

// Padding rows get the dense FFN but route to no expert, and the real
// token's logits are the same bits wherever its row is among them.
TEST(StaticMoe, Gemma4MoePaddingRowsPickNoExpertsAndMoveNoBits) {
  const auto model = gemma4_moe();
  const OneRowStep first = generate_on_row(*model, 0, 1);
  const OneRowStep third = generate_on_row(*model, 2, 1);
  const OneRowStep full = generate_on_row(*model, 0, 4);
  EXPECT_EQ(first.moe_tokens, 1);
  EXPECT_EQ(third.moe_tokens, 1);
  EXPECT_EQ(full.moe_tokens, 4);
  ASSERT_EQ(first.logits.size(), third.logits.size());
  EXPECT_TRUE(testing::same_bits(first.logits, third.logits));
  EXPECT_TRUE(testing::same_bits(first.logits, full.logits));
}

TEST(StaticMoe, Gemma4MoeTwoSlotsWithQuantizedKvEqualDynamic) {
  const auto model = gemma4_moe();
  const KvFormat kv{KvDtype::Q4, KvDtype::Int8};
  testing::expect_two_slots_equal_dynamic(*model, testing::small_static_config(2, kv), 3,
                                          test_prompt(21, 1), test_prompt(7, 2), 8);
}

// The dense FFN's operands of gemma4's op: refused when missing, or when x
// is not the residual stream; a qwen3moe op may not have them.
TEST(StaticMoe, Gemma4MoeOperandsAreChecked) {
  const auto model = gemma4_moe();
  const PlanSet plans = compile_plans(*model, testing::small_static_config(), 1);
  EXPECT_EQ(load_plans(serialize_plans(plans), "mem", *model), plans);
  const auto refusal = [&](const Model& m, const Plan& plan, int operand,
                           uint16_t buffer) -> std::string {
    Plan edited = plan;
    for (PlanOp& op : edited.ops)
      if (op.code == OpCode::MoeFfn && op.layer == 1) op.buffers[size_t(operand)] = buffer;
    try {
      validate_plan(edited, m, 1);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  };
  uint16_t xn = kNoBuffer;
  for (const PlanOp& op : plans.prefill.ops)
    if (op.code == OpCode::MoeFfn && op.layer == 1) xn = op.buffers[0];
  EXPECT_NE(refusal(*model, plans.prefill, 3, kNoBuffer).find("no x, gate or up for the dense FFN"),
            std::string::npos);
  EXPECT_NE(refusal(*model, plans.prefill, 2, xn).find("used as xn and as x"), std::string::npos);
  const auto qwen = qwen3moe();
  const PlanSet qwen_plans = compile_plans(*qwen, testing::small_static_config(), 1);
  EXPECT_NE(refusal(*qwen, qwen_plans.prefill, 2, qwen_plans.prefill.ops[1].buffers[0])
                .find("x, gate or up of a dense FFN the model does not have"),
            std::string::npos);
}

// The op set grew (moe_ffn, then the output gate): a plan file of version 3 is refused by name;
// a dense FFN op in a mixture-of-experts plan is refused by validation.
TEST(StaticMoe, PlanFilesRoundTripAndOlderOrMismatchedOnesAreRefused) {
  const auto model = qwen3moe();
  const PlanSet plans = compile_plans(*model, testing::small_static_config(), 1);
  const std::vector<uint8_t> bytes = serialize_plans(plans);
  EXPECT_EQ(load_plans(bytes, "mem", *model), plans);
  std::vector<uint8_t> v3 = bytes;
  v3[8] = 3;
  try {
    load_plans(v3, "old.kvfplan", *model);
    FAIL() << "a version 3 plan file was loaded";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("version 3 is not supported (expected " +
                                         std::to_string(kPlanFileVersion) + ")"),
              std::string::npos)
        << e.what();
  }
  PlanSet dense_op = plans;
  for (PlanOp& op : dense_op.prefill.ops)
    if (op.code == OpCode::MoeFfn) op.code = OpCode::Ffn;
  EXPECT_THROW(load_plans(serialize_plans(dense_op), "edited.kvfplan", *model), PlanError);
}

}  // namespace
}  // namespace kvforge
