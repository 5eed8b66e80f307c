// The static pipeline records the mixture-of-experts FFN as one op that runs
// the forward pass's own moe_ffn (model/moe_ffn.h): padding rows are routed
// like any row, and a token's experts and sums depend on its row alone, so
// static logits equal the dynamic ones bit for bit through chunked prefill,
// the generate variants and two slots.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/static_pipeline/plan_file.h"
#include "static_test_util.h"

namespace kvforge {
namespace {

using testing::dynamic_greedy;
using testing::expect_same_traces;
using testing::GreedyTrace;
using testing::static_greedy;
using testing::test_prompt;

// 8 experts, 2 picked: a chunk of 8 rows reaches most experts with uneven counts.
std::unique_ptr<Model> qwen3moe() { return testing::make_moe_test_model(8, 2, 32, 17); }

TEST(StaticMoe, Qwen3MoeSameLogitsBitsAsDynamicThroughChunksAndVariants) {
  const auto model = qwen3moe();
  const StaticConfig config = testing::small_static_config();
  ThreadPool pool(2);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 2));
  for (int32_t len : {1, 9, 23}) {  // one row, past one chunk, three chunks (the last padded)
    SCOPED_TRACE("prompt length " + std::to_string(len));
    const std::vector<int32_t> prompt = test_prompt(size_t(len), len);
    const int steps = len == 23 ? config.capacity() - len : 6;  // 23: through every variant
    const GreedyTrace want = dynamic_greedy(*model, prompt, steps, 2, {}, config.capacity());
    expect_same_traces(static_greedy(runner, 0, prompt, steps), want);
    runner.release(0);
  }
}

// Two slots in one generate step (and an idle padding row between prefills).
TEST(StaticMoe, TwoSlotsWithQuantizedKvEqualDynamic) {
  const auto model = qwen3moe();
  const KvFormat kv{KvDtype::F16, KvDtype::Int8};
  testing::expect_two_slots_equal_dynamic(*model, testing::small_static_config(2, kv), 3,
                                          test_prompt(13, 1), test_prompt(6, 2), 8);
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
