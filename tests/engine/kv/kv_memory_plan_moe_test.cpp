// kv-plan's shapes of mixtures of experts: every expert counts towards the
// weights in memory, only the routed ones towards what a token reads.
#include <gtest/gtest.h>

#include "engine/kv/kv_memory_plan.h"
#include "test_models.h"

namespace kvforge {
namespace {

// Qwen3-30B-A3B's model card: 30.5B parameters, 3.3B activated; 48 layers of
// 32 query / 4 KV heads of 128, so 2 * 48 * 4 * 128 * 2 bytes of f16 K/V per token.
TEST(KvMemoryPlanMoe, Qwen3_30bA3bPreset) {
  const auto s = ModelShape::preset("qwen3-30b-a3b");
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(double(s->n_params()) / 1e9, 30.5, 0.05);
  EXPECT_NEAR(double(s->n_active_params()) / 1e9, 3.3, 0.06);
  EXPECT_EQ(kv_bytes_per_token(*s, KvFormat{KvDtype::F16, KvDtype::F16}), 98304u);
}

// gpt-oss-20b's model card: 20.9B parameters, 3.61B active (counting the
// unembedding but not the embedding, whose one row a token reads); 24 layers
// of 64 query / 8 KV heads of 64, so 2 * 24 * 8 * 64 * 2 bytes of f16 K/V
// per token, of which the 12 windowed layers keep at most 128 + 16
// positions (blocks of 16).
TEST(KvMemoryPlanMoe, GptOss20bPreset) {
  const auto s = ModelShape::preset("gpt-oss-20b");
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(double(s->n_params()) / 1e9, 20.9, 0.05);
  EXPECT_NEAR(double(s->n_active_params() - s->n_vocab * s->n_embd) / 1e9, 3.61, 0.01);
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  EXPECT_EQ(kv_bytes_per_token(*s, f16), 49152u);
  const uint64_t per_layer_token = 49152u / 24;
  EXPECT_EQ(kv_bytes_per_sequence(*s, f16, 4096, 16),
            per_layer_token * (12 * 4096 + 12 * (128 + 16)));
}

// From a file's config: the experts' shape, and per layer 3 * n_embd *
// n_ff_exp parameters for each expert plus the router's n_embd * n_expert.
TEST(KvMemoryPlanMoe, ShapeOfAQwen3MoeFile) {
  const auto model = testing::make_moe_test_model(8, 2, 32);
  const ModelShape s = ModelShape::from_config(model->config());
  EXPECT_EQ(s.n_expert, 8);
  EXPECT_EQ(s.n_expert_used, 2);
  EXPECT_EQ(s.n_ff_exp, 32);
  const int64_t per_expert = 3 * 64 * 32;
  EXPECT_EQ(s.n_params() - s.n_active_params(), s.n_layer * 6 * per_expert);
}

}  // namespace
}  // namespace kvforge
