// kv-plan's shapes of mixtures of experts: every expert counts towards the
// weights in memory, only the routed ones towards what a token reads.
//
// The hybrid mixtures (Qwen3-Next-80B-A3B, Qwen3.5-35B-A3B): K/V per token
// in the one layer of four with full attention, a fixed recurrent state per
// sequence in the other three. The presets' figures equal what the engine
// computes from a file of that shape (ModelConfig's kv_bytes_per_token and
// state_bytes_per_sequence size its block pool and state slots), and their
// parameters the model cards'.
#include <gtest/gtest.h>

#include <string>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "engine/kv/kv_memory_plan.h"
#include "model/model_config.h"
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

const KvFormat kHalf{KvDtype::F16, KvDtype::F16};

// The metadata llama.cpp's converter writes for shape `s` of `arch` (no
// tensors: ModelConfig reads keys only).
gguf::GgufFile hybrid_moe_metadata(const ModelShape& s, const std::string& arch) {
  gguf::GgufWriter w;
  const std::string a = arch + ".";
  const auto u32 = [](int64_t v) { return gguf::Value::u32(uint32_t(v)); };
  w.set("general.architecture", gguf::Value::string(arch));
  w.set(a + "context_length", u32(s.n_ctx_train));
  w.set(a + "embedding_length", u32(s.n_embd));
  w.set(a + "block_count", u32(s.n_layer));
  w.set(a + "feed_forward_length", u32(s.n_ff));
  w.set(a + "vocab_size", u32(s.n_vocab));
  w.set(a + "attention.head_count", u32(s.n_head));
  w.set(a + "attention.head_count_kv", u32(s.n_kv_head));
  w.set(a + "attention.key_length", u32(s.head_dim));
  w.set(a + "attention.value_length", u32(s.head_dim));
  w.set(a + "rope.dimension_count", u32(s.head_dim / 4));
  w.set(a + "expert_count", u32(s.n_expert));
  w.set(a + "expert_used_count", u32(s.n_expert_used));
  w.set(a + "expert_feed_forward_length", u32(s.n_ff_exp));
  w.set(a + "expert_shared_feed_forward_length", u32(s.n_ff_shexp));
  w.set(a + "ssm.conv_kernel", u32(4));
  w.set(a + "ssm.state_size", u32(128));
  w.set(a + "ssm.group_count", u32(16));
  w.set(a + "ssm.time_step_rank", u32(32));
  w.set(a + "ssm.inner_size", u32(32 * 128));
  w.set(a + "full_attention_interval", u32(4));
  if (arch == "qwen35moe")
    w.set(a + "rope.dimension_sections", gguf::Value::i32_array({11, 11, 10, 0}));
  return gguf::GgufFile::from_bytes(w.to_bytes(), arch + ".gguf");
}

void expect_engine_figures(const ModelShape& s, const std::string& arch) {
  const ModelConfig c = ModelConfig::from_gguf(hybrid_moe_metadata(s, arch));
  EXPECT_EQ(kv_bytes_per_token(s, kHalf), c.kv_bytes_per_token(2));
  EXPECT_EQ(s.state_bytes_per_sequence, c.state_bytes_per_sequence());
  EXPECT_EQ(s.n_recurrent_layers, c.n_layer - c.n_kv_layers());
  const ModelShape from_file = ModelShape::from_config(c);
  EXPECT_EQ(kv_bytes_per_sequence(from_file, kHalf, 4096, 16),
            kv_bytes_per_sequence(s, kHalf, 4096, 16));
  EXPECT_EQ(from_file.n_ff_shexp, s.n_ff_shexp);
}

// Qwen3-Next-80B-A3B's model card: 80B parameters (79B without the
// embeddings), 3B activated; 12 of 48 layers keep K/V (2 heads of 256), 36
// keep a state of conv (2·16 + 32)·128 channels × 3 taps and 32 matrices of
// 128 × 128, in f32.
TEST(KvMemoryPlanHybridMoe, Qwen3Next80bA3bPreset) {
  const auto s = ModelShape::preset("qwen3-next-80b-a3b");
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(double(s->n_params()) / 1e9, 80.0, 0.5);
  EXPECT_NEAR(double(s->n_params() - 2 * s->n_vocab * s->n_embd) / 1e9, 79.0, 0.1);
  EXPECT_NEAR(double(s->n_active_params() - 2 * s->n_vocab * s->n_embd) / 1e9, 3.0, 0.3);
  EXPECT_EQ(kv_bytes_per_token(*s, kHalf), 2u * 12 * 2 * 256 * 2);
  EXPECT_EQ(s->state_bytes_per_sequence, 36u * (8192 * 3 + 32 * 128 * 128) * 4);
  expect_engine_figures(*s, "qwen3next");
}

// Qwen3.5-35B-A3B (text): 35B parameters, 3B active; 10 of 40 layers keep K/V.
TEST(KvMemoryPlanHybridMoe, Qwen35_35bA3bPreset) {
  const auto s = ModelShape::preset("qwen3.5-35b-a3b");
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(double(s->n_params()) / 1e9, 35.0, 0.5);
  EXPECT_NEAR(double(s->n_active_params() - s->n_vocab * s->n_embd) / 1e9, 3.0, 0.1);
  EXPECT_EQ(kv_bytes_per_token(*s, kHalf), 2u * 10 * 2 * 256 * 2);
  EXPECT_EQ(s->state_bytes_per_sequence, 30u * (8192 * 3 + 32 * 128 * 128) * 4);
  expect_engine_figures(*s, "qwen35moe");
}

}  // namespace
}  // namespace kvforge
