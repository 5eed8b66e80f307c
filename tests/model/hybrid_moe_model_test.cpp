// qwen35moe and qwen3next files as llama.cpp reads them: the hybrid layer mix
// with a mixture of experts and a shared expert as FFN; Qwen3-Next's grouped
// value heads and fused ssm_ba; the keys neither reads refused by name; the
// shared expert's gated output added to the routed sum. Their MTP blocks:
// hybrid_model_test.cpp; their logits against llama.cpp: hybrid_golden_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "edited_model.h"
#include "model/model.h"
#include "model/moe_ffn.h"
#include "model/random_model.h"

namespace kvforge {
namespace {
namespace hybrid_moe_model {  // the unity build joins this file with others

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

RandomModelSpec spec_of(const char* arch) {
  RandomModelSpec s;
  s.arch = arch;
  s.n_layer = 8;
  s.head_dim = 32;
  s.n_ctx = 256;
  s.n_ff_shexp = 48;
  s.seed = 7;
  return s;
}

std::unique_ptr<Model> load(const RandomModelSpec& s) {
  return Model::from_file(gguf::GgufFile::from_bytes(make_random_model(s).to_bytes(), s.arch));
}

TEST(HybridMoeModel, ReadsTheExpertsAndTheSharedExpert) {
  for (const char* arch : {"qwen35moe", "qwen3next"}) {
    SCOPED_TRACE(arch);
    const auto model = load(spec_of(arch));
    const ModelConfig& c = model->config();
    ASSERT_TRUE(c.hybrid());
    EXPECT_EQ(c.recurrent_layers, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
    EXPECT_TRUE(c.attn_gate);
    EXPECT_EQ(c.moe.n_expert, 8);
    EXPECT_EQ(c.moe.n_expert_used, 2);
    EXPECT_EQ(c.moe.n_ff_shexp, 48);
    EXPECT_TRUE(c.moe.norm_topk);
    EXPECT_EQ(c.moe.gating, ExpertGating::SoftmaxThenTopK);
    const MoeWeights& m = model->weights().layers[0].moe;
    EXPECT_EQ(m.shared_gate_inp.rows, 1);
    EXPECT_EQ(m.shared_gate.rows, 48);
    EXPECT_EQ(m.shared_down.cols, 48);
  }
}

// 2 key heads, 4 value heads: qwen35moe tiles them (value head h reads key
// head h % 2), qwen3next groups them (h / 2) and fuses beta|alpha.
TEST(HybridMoeModel, Qwen3NextGroupsValueHeads) {
  const auto tiled = load(spec_of("qwen35moe"));
  const auto grouped = load(spec_of("qwen3next"));
  const LinearAttentionConfig& t = tiled->config().linear;
  const LinearAttentionConfig& g = grouped->config().linear;
  ASSERT_EQ(g.n_k_heads, 2);
  ASSERT_EQ(g.n_v_heads, 4);
  EXPECT_FALSE(t.grouped_heads);
  EXPECT_TRUE(g.grouped_heads);
  const int want_tiled[] = {0, 1, 0, 1}, want_grouped[] = {0, 0, 1, 1};
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(t.key_head(h), want_tiled[h]) << h;
    EXPECT_EQ(g.key_head(h), want_grouped[h]) << h;
  }
  EXPECT_EQ(grouped->weights().layers[0].linear.beta_alpha.rows, 8);
  EXPECT_EQ(grouped->weights().layers[0].linear.beta.data, nullptr);
  EXPECT_EQ(grouped->config().rope_dim, 8);  // head_dim / 4, plain NeoX
}

TEST(HybridMoeModel, KeysTheyDoNotReadAreRefused) {
  // Qwen3-Next rotates with plain NeoX RoPE: llama.cpp reads no sections for it.
  expect_mentions(
      load_error(edited_model(
          spec_of("qwen3next"),
          [](gguf::GgufWriter& w) {
            w.set("qwen3next.rope.dimension_sections", gguf::Value::i32_array({2, 1, 1, 0}));
          })),
      {"qwen3next.rope.dimension_sections", "does not implement"});
  // Neither architecture reads an expert weight scale (llama.cpp's default 0: none).
  expect_mentions(load_error(edited_model(spec_of("qwen35moe"),
                                          [](gguf::GgufWriter& w) {
                                            w.set("qwen35moe.expert_weights_scale",
                                                  gguf::Value::f32(2.5f));
                                          })),
                  {"qwen35moe.expert_weights_scale", "does not implement"});
}

// The shared expert is required, as llama.cpp's loaders require it.
TEST(HybridMoeModel, MissingSharedExpertIsRefused) {
  const gguf::GgufFile src =
      gguf::GgufFile::from_bytes(make_random_model(spec_of("qwen3next")).to_bytes());
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) out.set(kv.key, kv.value);
  for (const gguf::TensorInfo& t : src.tensors()) {
    if (t.name == "blk.2.ffn_up_shexp.weight") continue;
    const auto data = src.tensor_data(t);
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data.begin(), data.end()));
  }
  expect_mentions(load_error(gguf::GgufFile::from_bytes(out.to_bytes(), "edited.gguf")),
                  {"edited.gguf", "blk.2.ffn_up_shexp.weight", "missing"});
}

// moe_ffn with the shared expert = without it + sigmoid(g · x) · its SwiGLU
// output, the latter computed here in double from the dequantized weights.
TEST(HybridMoeModel, SharedExpertAddsItsGatedOutput) {
  const auto model = load(spec_of("qwen35moe"));
  const ModelConfig& c = model->config();
  const MoeWeights& w = model->weights().layers[0].moe;
  const int64_t d = c.n_embd, ff = c.moe.n_ff_shexp, n = 3;
  std::vector<float> x(size_t(n * d));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i));
  ThreadPool pool(2);
  MatmulScratch ms;
  MoeScratch s1, s2;
  std::vector<float> with(x.size()), without(x.size());
  moe_ffn(c, w, x.data(), n, with.data(), s1, pool, ms);
  ModelConfig routed_only = c;
  routed_only.moe.n_ff_shexp = 0;
  moe_ffn(routed_only, w, x.data(), n, without.data(), s2, pool, ms);
  const auto row = [](const WeightView& m, int64_t r) {
    std::vector<float> out(size_t(m.cols));
    dequantize_row(m.type,
                   static_cast<const uint8_t*>(m.data) + size_t(r) * row_bytes(m.type, m.cols),
                   out.data(), m.cols);
    return out;
  };
  const auto dot = [](const std::vector<float>& a, const float* b) {
    double acc = 0;
    for (size_t i = 0; i < a.size(); ++i) acc += double(a[i]) * double(b[i]);
    return acc;
  };
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x.data() + t * d;
    const double g = 1.0 / (1.0 + std::exp(-dot(row(w.shared_gate_inp, 0), xt)));
    std::vector<float> act(static_cast<size_t>(ff));
    for (int64_t i = 0; i < ff; ++i) {
      const double a = dot(row(w.shared_gate, i), xt), u = dot(row(w.shared_up, i), xt);
      act[size_t(i)] = float(a / (1.0 + std::exp(-a)) * u);
    }
    for (int64_t i = 0; i < d; ++i) {
      const double want = g * dot(row(w.shared_down, i), act.data());
      // f32 sums of 64 and 48 products against double: a few ulp of O(1) values.
      EXPECT_NEAR(with[size_t(t * d + i)] - without[size_t(t * d + i)], want, 1e-5)
          << "token " << t << " row " << i;
    }
  }
}

}  // namespace hybrid_moe_model
}  // namespace
}  // namespace kvforge
