// Plans: memory planning, serialization round trip, and every way a plan
// file can be wrong (truncated, bad magic or version, corrupted bytes,
// out-of-range offsets and ids, another model, another configuration).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/static_pipeline/plan_file.h"
#include "engine/static_pipeline/static_config.h"
#include "model/layer_walk.h"
#include "model/model_fingerprint.h"
#include "static_test_util.h"

namespace kvforge {
namespace {

using testing::small_static_config;

std::string load_error(std::span<const uint8_t> bytes, const Model& model) {
  try {
    load_plans(bytes, "test.kvfplan", model);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "";
}

class StaticPlanFile : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::make_test_model(testing::tiny_spec("qwen2", 3));
    plans_ = compile_plans(*model_, small_static_config(2), 2);
    bytes_ = serialize_plans(plans_);
  }
  // Serializes a modified copy: structured corruption that passes the checksum.
  std::string error_after(const std::function<void(PlanSet&)>& edit) {
    PlanSet p = plans_;
    edit(p);
    return load_error(serialize_plans(p), *model_);
  }
  std::unique_ptr<Model> model_;
  PlanSet plans_;
  std::vector<uint8_t> bytes_;
};

TEST_F(StaticPlanFile, RoundTripGivesTheSamePlansAndTheSameOutputs) {
  const PlanSet loaded = load_plans(bytes_, "mem", *model_);
  EXPECT_EQ(loaded, plans_);
  const auto path = std::filesystem::temp_directory_path() / "kvforge_static_plan_test.kvfplan";
  write_plan_file(path, plans_);
  const PlanSet from_disk = load_plan_file(path, *model_);
  std::filesystem::remove(path);
  EXPECT_EQ(from_disk, plans_);
  ThreadPool pool(2);
  StaticRunner compiled(*model_, pool, plans_);
  StaticRunner loaded_runner(*model_, pool, from_disk);
  const std::vector<int32_t> prompt = testing::test_prompt(19);
  const testing::GreedyTrace a = testing::static_greedy(compiled, 1, prompt, 30);
  const testing::GreedyTrace b = testing::static_greedy(loaded_runner, 1, prompt, 30);
  EXPECT_EQ(a.tokens, b.tokens);
  for (size_t i = 0; i < a.logits.size(); ++i)
    ASSERT_TRUE(testing::same_bits(a.logits[i], b.logits[i]));
}

TEST_F(StaticPlanFile, EveryTruncationIsAClearError) {
  for (size_t n = 0; n < bytes_.size(); n += (n < 200 ? 1 : 97)) {
    const std::string msg = load_error(std::span(bytes_).first(n), *model_);
    ASSERT_FALSE(msg.empty()) << "accepted " << n << " of " << bytes_.size() << " bytes";
    if (n >= 12) {
      EXPECT_NE(msg.find("truncated"), std::string::npos) << n << ": " << msg;
    }
  }
}

TEST_F(StaticPlanFile, BadMagicVersionChecksumAndTrailingBytes) {
  std::vector<uint8_t> b = bytes_;
  b[0] = 'X';
  EXPECT_NE(load_error(b, *model_).find("bad magic"), std::string::npos);
  b = bytes_;
  b[8] = 9;  // version
  EXPECT_NE(load_error(b, *model_).find("version 9 is not supported"), std::string::npos);
  for (size_t at : {size_t(40), bytes_.size() / 2, bytes_.size() - 9}) {
    b = bytes_;
    b[at] ^= 0x10;
    const std::string msg = load_error(b, *model_);
    EXPECT_FALSE(msg.empty()) << "flip at " << at << " accepted";
  }
  b = bytes_;
  b[bytes_.size() / 2] ^= 0x01;
  b.push_back(0);
  EXPECT_NE(load_error(b, *model_).find("unexpected bytes"), std::string::npos);
  b = bytes_;
  b[bytes_.size() - 100] ^= 0x01;  // inside the last plan's ops or split: checksum catches it
  EXPECT_FALSE(load_error(b, *model_).empty());
}

TEST_F(StaticPlanFile, StructuralCorruptionNamesThePlanAndField) {
  const auto expect = [&](const std::function<void(PlanSet&)>& edit, const char* needle) {
    const std::string msg = error_after(edit);
    EXPECT_NE(msg.find(needle), std::string::npos) << "want '" << needle << "', got: " << msg;
  };
  expect([](PlanSet& p) { p.generate[1].buffers[2].offset = uint64_t(1) << 40; },
         "outside the arena");
  expect([](PlanSet& p) { p.generate[0].buffers[0].offset += 4; }, "not 64-byte aligned");
  expect([](PlanSet& p) { p.prefill.buffers[3].bytes -= 4; }, "its ops need");
  expect([](PlanSet& p) { p.prefill.ops[5].buffers[1] = 4000; }, "is not one of the plan's");
  expect([](PlanSet& p) { p.prefill.ops[5].layer = 7; }, "layer 7 outside");
  expect([](PlanSet& p) { p.generate[2].ops[2].norm = uint8_t(LayerNorm::AttnPost); },
         "attn_post_norm is not an input norm");
  expect([](PlanSet& p) { p.generate[0].ops[0].rows = 99; }, "99 rows");
  expect([](PlanSet& p) { p.generate[0].arena_bytes += 64; }, "buffers end at");
  expect([](PlanSet& p) { p.generate[0].matmul_scratch_bytes = 12345; }, "matmul scratch");
  expect([](PlanSet& p) { p.generate[3].attention_split.back() = 5; }, "attention split");
  expect([](PlanSet& p) { p.generate[1].kv_len = 40; }, "generate variant 32");
  expect([](PlanSet& p) { p.n_threads = 3; }, "expected 4 for 3 threads");
  expect([](PlanSet& p) { p.config.prefill_chunk = 6; }, "power of two");
}

// Operands are buffers bound by role, and each step of the walk appears once.
TEST_F(StaticPlanFile, OperandsOutOfTheirRoleAndMissingStepsAreRefused) {
  const auto expect = [&](const std::function<void(PlanSet&)>& edit, const char* needle) {
    const std::string msg = error_after(edit);
    EXPECT_NE(msg.find(needle), std::string::npos) << "want '" << needle << "', got: " << msg;
  };
  ASSERT_EQ(plans_.prefill.ops[3].code, OpCode::AttentionIn);  // xn, cos_sin, q, k, v
  expect([](PlanSet& p) { p.prefill.ops[3].buffers[3] = p.prefill.ops[3].buffers[2]; },
         "is used as q and as k");
  expect([](PlanSet& p) { p.prefill.ops[3].buffers[1] = p.prefill.ops[3].buffers[0]; },
         "is used as xn and as rope angles");
  expect([](PlanSet& p) { p.generate[1].ops[1].buffers[2] = p.generate[1].ops[1].buffers[1]; },
         "a second RoPE table the model does not have");
  expect([](PlanSet& p) { p.generate[0].ops[4].code = OpCode::WindowAttend; },
         "is used as attention mask and as staged records");
  ASSERT_EQ(plans_.generate[0].ops[6].code, OpCode::ResidualNorm);
  expect([](PlanSet& p) { p.generate[0].ops[6].buffers[2] = kNoBuffer; },
         "a norm without a normed output");
  expect([](PlanSet& p) { p.generate[0].ops[6].next_norm = uint8_t(LayerNorm::FfnPost); },
         "ffn_post_norm is not an input norm");
  expect([](PlanSet& p) { p.generate[0].ops[7] = p.generate[0].ops[3]; },
         "1 attention output and 0 FFN ops, expected 1 each");
  expect([](PlanSet& p) { p.prefill.ops[0].buffers[1] = 0; }, "operand 1 past its roles");
}

// A plan is the layer walk recorded: one op per step in the walk's order,
// a sliding-window layer's attention its own op.
TEST(StaticPlanOps, OneOpPerStepOfTheLayerWalk) {
  RandomModelSpec spec = testing::tiny_spec("gemma2", 5);
  spec.n_layer = 2;
  spec.sliding_window = 5;
  spec.swa_pattern = 2;  // layer 0 windowed, layer 1 full
  const auto model = testing::make_test_model(spec);
  const Plan plan = compile_plan(*model, PlanKind::Prefill, 8, 64, 1, 1);
  std::vector<std::string> ops;
  for (const PlanOp& op : plan.ops)
    ops.push_back(op_name(op.code) + (op.layer < 0 ? "" : " " + std::to_string(op.layer)));
  const std::vector<std::string> want = {
      "masks",           "embed",           "norm 0",          "attention_in 0",
      "window_attend 0", "attention_out 0", "residual_norm 0", "ffn 0",
      "residual_norm 0", "attention_in 1",  "attend 1",        "attention_out 1",
      "residual_norm 1", "ffn 1",           "residual_norm 1", "logits"};
  EXPECT_EQ(ops, want);
  const PlanOp &to_ffn = plan.ops[6], &to_layer1 = plan.ops[8], &last = plan.ops[14];
  EXPECT_EQ(to_ffn.norm, uint8_t(LayerNorm::AttnPost));
  EXPECT_EQ(to_ffn.next_norm, uint8_t(LayerNorm::Ffn));
  EXPECT_EQ(to_ffn.next_layer, 0);
  EXPECT_EQ(to_layer1.norm, uint8_t(LayerNorm::FfnPost));
  EXPECT_EQ(to_layer1.next_norm, uint8_t(LayerNorm::Attn));
  EXPECT_EQ(to_layer1.next_layer, 1);
  EXPECT_EQ(last.next_norm, kNoNorm);
  EXPECT_EQ(last.buffers[2], kNoBuffer);
  EXPECT_EQ(plan.ops[15].buffers[2], plan.logits_buffer);
}

TEST_F(StaticPlanFile, AnotherModelIsRefused) {
  // Same shapes and metadata layout, other weights (seed): only the sampled
  // tensor bytes tell them apart.
  const auto other = testing::make_test_model(testing::tiny_spec("qwen2", 4));
  EXPECT_NE(model_fingerprint(*other), model_fingerprint(*model_));
  const std::string msg = load_error(bytes_, *other);
  EXPECT_NE(msg.find("compiled for a different model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kvforge compile"), std::string::npos) << msg;
}

TEST_F(StaticPlanFile, AnotherConfigurationIsRefusedNamingTheFlags) {
  StaticConfig wanted = plans_.config;
  EXPECT_NO_THROW(check_plan_config(plans_, wanted, "p"));
  wanted.max_prompt_len = 32;
  wanted.generate_variants = {56};
  wanted.kv_format.v = KvDtype::F16;
  try {
    check_plan_config(plans_, wanted, "p.kvfplan");
    FAIL() << "accepted";
  } catch (const PlanError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--max-prompt-len 40 in the plan, 32 requested"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--generate-variants 16,32,48,64 in the plan, 56"), std::string::npos);
    EXPECT_NE(msg.find("--kv-type-v f32 in the plan, f16"), std::string::npos);
    EXPECT_EQ(msg.find("--prefill-chunk"), std::string::npos);
  }
  EXPECT_NE(config_fingerprint(wanted), config_fingerprint(plans_.config));
}

// Buffers alive at the same time never share bytes, and reuse makes the arena
// much smaller than one buffer per intermediate.
TEST(StaticPlanMemory, LiveBuffersNeverOverlapAndReuseShrinksTheArena) {
  const auto model = testing::make_test_model(testing::tiny_spec("qwen2", 3));
  const Plan plan = compile_plan(*model, PlanKind::Prefill, 8, 64, 1, 2);
  std::vector<int> first(plan.buffers.size(), -1), last(plan.buffers.size(), -1);
  for (size_t i = 0; i < plan.ops.size(); ++i)
    for (uint16_t b : plan.ops[i].buffers) {
      if (b == kNoBuffer) continue;
      if (first[b] < 0) first[b] = int(i);
      last[b] = int(i);
    }
  last[plan.logits_buffer] = int(plan.ops.size());
  for (size_t i = 0; i < plan.ops.size(); ++i)
    if (plan.ops[i].code == OpCode::Attend) {
      const uint16_t s = plan.attention_scratch_buffer;
      if (first[s] < 0) first[s] = int(i);
      last[s] = int(i);
    }
  uint64_t naive = 0, peak_live = 0;
  for (size_t i = 0; i <= plan.ops.size(); ++i) {
    uint64_t live = 0;
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      if (first[b] <= int(i) && int(i) <= last[b]) live += (plan.buffers[b].bytes + 63) / 64 * 64;
    peak_live = std::max(peak_live, live);
  }
  for (size_t a = 0; a < plan.buffers.size(); ++a) {
    naive += plan.buffers[a].bytes;
    for (size_t b = a + 1; b < plan.buffers.size(); ++b) {
      const bool live_together = first[a] <= last[b] && first[b] <= last[a];
      const PlanBuffer &x = plan.buffers[a], &y = plan.buffers[b];
      const bool share_bytes = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      ASSERT_FALSE(live_together && share_bytes) << x.name << " and " << y.name;
    }
  }
  // Greedy placement stays near the lower bound (the peak of live bytes) and
  // far below one buffer per intermediate.
  EXPECT_LE(plan.arena_bytes, peak_live + peak_live / 4) << plan.arena_bytes << " vs " << peak_live;
  EXPECT_LT(plan.arena_bytes * 2, naive) << plan.arena_bytes << " vs " << naive;
}

}  // namespace
}  // namespace kvforge
