#include "engine/kv/kv_memory_plan.h"

#include <gtest/gtest.h>

#include "model/random_model.h"

namespace kvforge {
namespace {

constexpr KvFormat kF16{KvDtype::F16, KvDtype::F16};
constexpr KvFormat kInt8{KvDtype::Int8, KvDtype::Int8};
constexpr KvFormat kQ4{KvDtype::Q4, KvDtype::Q4};

ModelShape preset(const char* name) {
  const auto s = ModelShape::preset(name);
  EXPECT_TRUE(s.has_value()) << name;
  return *s;
}

// LLaMA-7B: 6,738,415,616 parameters (the published count): embedding and
// output 32000×4096 each, 32 layers of 4·4096² attention + 3·4096·11008 FFN
// + 2 norms, and the final norm. In fp16 (norms in f32 as GGUF stores them)
// that is 13.48 GB = 12.55 GiB; the "13 GB" usually quoted is the decimal figure.
TEST(KvMemoryPlan, Llama7bWeights) {
  const ModelShape s = preset("llama-7b");
  EXPECT_EQ(s.n_params(), 6738415616);
  const uint64_t bytes = weight_bytes(s, GgmlType::F16);
  EXPECT_EQ(bytes, uint64_t(s.n_matrix_params()) * 2 + uint64_t(s.n_norm_params()) * 4);
  EXPECT_NEAR(double(bytes) / 1e9, 13.48, 0.005);
  EXPECT_NEAR(double(bytes) / kGiB, 12.55, 0.005);
  // Q8_0: 34 bytes per 32 weights.
  EXPECT_EQ(weight_bytes(s, GgmlType::Q8_0),
            uint64_t(s.n_matrix_params()) / 32 * 34 + uint64_t(s.n_norm_params()) * 4);
}

// 2 · 32 layers · 32 heads · 128 · 2048 tokens · 4 sequences · 2 bytes = 4 GiB.
TEST(KvMemoryPlan, Llama7bKvAtBatch4Times2048) {
  const ModelShape s = preset("llama-7b");
  const KvMemoryPlan p = plan_kv_memory(s, kF16, weight_bytes(s, GgmlType::F16), 2048, 4);
  EXPECT_EQ(p.kv_per_token, 2u * 32 * 32 * 128 * 2);  // 512 KiB
  EXPECT_EQ(p.kv_per_sequence, p.kv_per_token * 2048);
  EXPECT_EQ(p.kv_total, uint64_t(4) << 30);
  EXPECT_EQ(p.total, p.weight_bytes + p.kv_total);
}

// GQA: LLaMA-2-70B has 64 query heads but 8 KV heads. As if all 64 had K/V:
// 5 GiB at 1 × 2048 in f16; really 0.625 GiB — and int8/q4 shrink that further.
TEST(KvMemoryPlan, Llama2_70bCountsKvHeadsNotQueryHeads) {
  ModelShape s = preset("llama-2-70b");
  EXPECT_EQ(s.n_kv_head, 8);
  EXPECT_EQ(plan_kv_memory(s, kF16, 0, 2048, 1).kv_total, uint64_t(640) << 20);  // 0.625 GiB
  ModelShape mha = s;
  mha.n_kv_head = mha.n_head;
  EXPECT_EQ(plan_kv_memory(mha, kF16, 0, 2048, 1).kv_total, uint64_t(5) << 30);
  // Per format, with 8 KV heads of 128: int8 = 130/256 of f16, q4 = 80/256.
  EXPECT_EQ(plan_kv_memory(s, kInt8, 0, 2048, 1).kv_total, (uint64_t(640) << 20) / 256 * 130);
  EXPECT_EQ(plan_kv_memory(s, kQ4, 0, 2048, 1).kv_total, (uint64_t(640) << 20) / 256 * 80);
  EXPECT_EQ(plan_kv_memory(s, {KvDtype::Int8, KvDtype::F16}, 0, 2048, 1).kv_total,
            (uint64_t(640) << 20) / 512 * (130 + 256));
}

TEST(KvMemoryPlan, InverseQuestionsAreConsistent) {
  const ModelShape s = preset("llama-3-8b");
  const uint64_t w = weight_bytes(s, GgmlType::Q8_0);
  const uint64_t budget = uint64_t(24) << 30;
  for (KvFormat f : {kF16, kInt8, kQ4}) {
    const int64_t ctx = max_context_for(s, f, w, 4, budget);
    EXPECT_LE(plan_kv_memory(s, f, w, ctx, 4).total, budget);
    EXPECT_GT(plan_kv_memory(s, f, w, ctx + 1, 4).total, budget);
    const int64_t seqs = max_sequences_for(s, f, w, 8192, budget);
    EXPECT_LE(plan_kv_memory(s, f, w, 8192, seqs).total, budget);
    EXPECT_GT(plan_kv_memory(s, f, w, 8192, seqs + 1).total, budget);
  }
  // Fewer bytes per token, more sequences.
  EXPECT_GT(max_sequences_for(s, kInt8, w, 8192, budget),
            max_sequences_for(s, kF16, w, 8192, budget));
  EXPECT_GT(max_sequences_for(s, kQ4, w, 8192, budget),
            max_sequences_for(s, kInt8, w, 8192, budget));
  // Weights alone exceed the budget: nothing fits.
  EXPECT_EQ(max_context_for(s, kF16, w, 1, w), 0);
  EXPECT_EQ(max_sequences_for(s, kF16, w, 1, w / 2), 0);
  EXPECT_THROW(max_context_for(s, kF16, w, 0, budget), std::invalid_argument);
}

TEST(KvMemoryPlan, PoolBlocksFromKvBudget) {
  const ModelShape s = preset("tinyllama-1.1b");
  const uint64_t per_token = kv_bytes_per_token(s, kF16);
  EXPECT_EQ(per_token, 2u * 22 * 4 * 64 * 2);
  EXPECT_EQ(kv_pool_blocks(s, kF16, per_token * 16 * 10 + per_token * 15, 16), 10);
}

// A GGUF file: the exact tensor bytes, and the shape the planner derives from
// its metadata agrees with what the preset formula predicts for that shape.
TEST(KvMemoryPlan, GgufFileWeightsMatchTheFormula) {
  const RandomModelSpec spec = *RandomModelSpec::preset("tiny");
  const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
  const GgufWeights w = gguf_weights(gguf::GgufFile::from_bytes(bytes, "tiny"));
  EXPECT_EQ(w.shape.n_layer, 2);
  EXPECT_EQ(w.shape.n_kv_head, 2);
  EXPECT_EQ(w.bytes, weight_bytes(w.shape, GgmlType::F32));
}

TEST(KvMemoryPlan, UnknownPresetIsNullopt) {
  EXPECT_FALSE(ModelShape::preset("llama-9b").has_value());
  for (const auto& name : ModelShape::preset_names()) EXPECT_TRUE(ModelShape::preset(name)) << name;
}

}  // namespace
}  // namespace kvforge
