// kv-plan with sliding windows: the model presets' shapes, window-aware KV
// per sequence (what the paged engine's block manager holds at most during
// decode) and the figure: one 8192-token sequence of Gemma-2-2B.
#include <gtest/gtest.h>

#include "engine/kv/block_manager.h"
#include "engine/kv/kv_memory_plan.h"
#include "model/random_model.h"
#include "test_models.h"

namespace kvforge {
namespace {

constexpr KvFormat kPlanF16{KvDtype::F16, KvDtype::F16};

ModelShape plan_preset(const char* name) {
  const auto s = ModelShape::preset(name);
  EXPECT_TRUE(s.has_value()) << name;
  return s.value_or(ModelShape{});
}

TEST(KvMemoryPlanWindow, PresetShapes) {
  const ModelShape g2 = plan_preset("gemma-2-2b");
  EXPECT_EQ(g2.n_layer, 26);
  EXPECT_EQ(g2.head_dim, 256);
  EXPECT_EQ(g2.n_kv_head, 4);
  EXPECT_EQ(g2.sliding_window, 4096);
  EXPECT_EQ(g2.n_swa_layers, 13);
  EXPECT_NEAR(double(g2.n_params()) / 1e9, 2.61, 0.01);
  const ModelShape g3 = plan_preset("gemma-3-4b");
  EXPECT_EQ(g3.n_swa_layers, 29);  // 34 layers, every 6th global
  EXPECT_EQ(g3.sliding_window, 1024);
  EXPECT_EQ(kv_block_slots(g3), 5);
  EXPECT_EQ(plan_preset("qwen3-8b").n_swa_layers, 0);
  EXPECT_EQ(plan_preset("qwen3-8b").head_dim, 128);
  EXPECT_NEAR(double(plan_preset("qwen3-8b").n_params()) / 1e9, 8.19, 0.01);
  EXPECT_NEAR(double(plan_preset("llama-3.1-8b").n_params()) / 1e9, 8.03, 0.01);
  const ModelShape phi = plan_preset("phi-3-mini");
  EXPECT_EQ(phi.n_swa_layers, 32);
  EXPECT_EQ(phi.head_dim, 96);
  EXPECT_EQ(kv_block_slots(phi), 32);
}

// The figure of issue 24: f16 K/V, blocks of 16 tokens.
TEST(KvMemoryPlanWindow, Gemma2_2bSequenceOf8192Tokens) {
  const ModelShape s = plan_preset("gemma-2-2b");
  const KvMemoryPlan p = plan_kv_memory(s, kPlanF16, 0, 8192, 1, 16);
  const uint64_t per_layer_token = 4 * 256 * 2 * 2;  // KV heads · head_dim · (K, V) · f16
  EXPECT_EQ(p.kv_per_sequence_full, 26u * 8192 * per_layer_token);  // 832 MiB
  EXPECT_EQ(p.kv_per_sequence_full, 872415232u);
  EXPECT_EQ(p.kv_per_sequence, (13u * 8192 + 13u * (4096 + 16)) * per_layer_token);
  EXPECT_EQ(p.kv_per_sequence, 655163392u);  // 624.8 MiB, 75.1%
  // The same in the block manager's own count: blocks of 13 layer slots.
  const BlockManager m(1, 16, false, {0, 4096});
  const uint64_t block_bytes = uint64_t(kv_block_slots(s)) * 16 * per_layer_token;
  EXPECT_EQ(uint64_t(m.max_blocks_for_seq(8192, 1)) * block_bytes, p.kv_per_sequence);
  EXPECT_EQ(2u * 512 * block_bytes, p.kv_per_sequence_full);
}

TEST(KvMemoryPlanWindow, ShortSequencesAndModelsWithoutWindowsAreUnchanged) {
  const ModelShape g2 = plan_preset("gemma-2-2b");
  EXPECT_EQ(plan_kv_memory(g2, kPlanF16, 0, 4000, 1).kv_per_sequence,
            plan_kv_memory(g2, kPlanF16, 0, 4000, 1).kv_per_sequence_full);
  const ModelShape llama = plan_preset("llama-3.1-8b");
  EXPECT_EQ(kv_block_slots(llama), 32);
  const KvMemoryPlan p = plan_kv_memory(llama, kPlanF16, 0, 8192, 3);
  EXPECT_EQ(p.kv_per_sequence, p.kv_per_token * 8192);
  EXPECT_EQ(p.kv_total, 3 * p.kv_per_sequence);
}

TEST(KvMemoryPlanWindow, InverseQuestionsCountTheWindow) {
  const ModelShape g3 = plan_preset("gemma-3-4b");
  const uint64_t budget = uint64_t(4) << 30;
  const int64_t ctx = max_context_for(g3, kPlanF16, 0, 2, budget);
  EXPECT_LE(plan_kv_memory(g3, kPlanF16, 0, ctx, 2).total, budget);
  EXPECT_GT(plan_kv_memory(g3, kPlanF16, 0, ctx + 1, 2).total, budget);
  ModelShape full = g3;
  full.sliding_window = full.n_swa_layers = 0;
  EXPECT_GT(ctx, 3 * max_context_for(full, kPlanF16, 0, 2, budget));
  const int64_t seqs = max_sequences_for(g3, kPlanF16, 0, 32768, budget);
  EXPECT_LE(plan_kv_memory(g3, kPlanF16, 0, 32768, seqs).total, budget);
  EXPECT_GT(plan_kv_memory(g3, kPlanF16, 0, 32768, seqs + 1).total, budget);
  // Every layer windowed: a sequence's KV stops growing.
  EXPECT_EQ(max_context_for(plan_preset("phi-3-mini"), kPlanF16, 0, 1, budget), kMaxPlannedContext);
  // Pool blocks hold kv_block_slots layers.
  const uint64_t block = uint64_t(kv_block_slots(g3)) * 16 * 4 * 256 * 2 * 2;
  EXPECT_EQ(kv_pool_blocks(g3, kPlanF16, block * 10 + block / 2, 16), 10);
}

TEST(KvMemoryPlanWindow, ShapeFromAFileCountsItsWindowedLayers) {
  RandomModelSpec spec;
  spec.arch = "gemma2";
  spec.n_layer = 4;
  spec.sliding_window = 64;
  const auto model = testing::make_test_model(spec);
  const ModelShape s = ModelShape::from_config(model->config());
  EXPECT_EQ(s.n_swa_layers, 2);
  EXPECT_EQ(s.sliding_window, 64);
  EXPECT_EQ(kv_block_slots(s), 2);
}

}  // namespace
}  // namespace kvforge
