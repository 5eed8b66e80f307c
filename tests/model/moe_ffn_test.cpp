// Routing of the mixture-of-experts FFN (model/moe_ffn.h) on hand-computed
// cases, and its batch invariance: each token's output is the same bits
// alone as among neighbours routed to other experts.
#include "model/moe_ffn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/moe_tensor_parallel.h"
#include "test_models.h"

namespace kvforge {
namespace {

MoeConfig config(int n, int k, ExpertGating gating, bool norm, float scale = 1.0f) {
  return MoeConfig{n, k, 16, gating, norm, scale};
}

TEST(RouteToken, SoftmaxThenTopKPicksLargestTiesToLowerIndex) {
  const float logits[] = {0.0f, 2.0f, 1.0f, 2.0f};
  int32_t experts[2];
  float weights[2];
  route_token(config(4, 2, ExpertGating::SoftmaxThenTopK, false), logits, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  // Softmax over all four: e^2 / (1 + e + 2 e^2); f32 softmax, so 1e-6 relative.
  const double p = std::exp(2.0) / (1 + std::exp(1.0) + 2 * std::exp(2.0));
  EXPECT_NEAR(weights[0], p, 1e-6 * p);
  EXPECT_NEAR(weights[1], p, 1e-6 * p);
}

TEST(RouteToken, NormTopKAndScale) {
  const float logits[] = {0.0f, 3.0f, 1.0f};
  int32_t experts[2];
  float weights[2];
  route_token(config(3, 2, ExpertGating::SoftmaxThenTopK, true, 2.0f), logits, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 2);
  // Normalised over the two picked: e^3 / (e^3 + e), then doubled.
  const double w0 = std::exp(3.0) / (std::exp(3.0) + std::exp(1.0));
  EXPECT_NEAR(weights[0], 2 * w0, 1e-6);
  EXPECT_NEAR(weights[1], 2 * (1 - w0), 1e-6);
}

TEST(RouteToken, TopKThenSoftmaxNormalisesOverThePicked) {
  const float logits[] = {-1.0f, 0.5f, 4.0f, NAN, 0.5f};
  int32_t experts[3];
  float weights[3];
  route_token(config(5, 3, ExpertGating::TopKThenSoftmax, false), logits, experts, weights);
  EXPECT_EQ(experts[0], 2);
  EXPECT_EQ(experts[1], 1);  // the tie at 0.5 goes to the lower index first
  EXPECT_EQ(experts[2], 4);
  const double z = std::exp(4.0) + 2 * std::exp(0.5);
  EXPECT_NEAR(weights[0], std::exp(4.0) / z, 1e-6);
  EXPECT_NEAR(weights[1], std::exp(0.5) / z, 1e-6);
}

TEST(RouteToken, NaNLogitsStillPickDistinctExperts) {
  const float logits[] = {NAN, NAN, NAN};
  int32_t experts[3];
  float weights[3];
  route_token(config(3, 3, ExpertGating::TopKThenSoftmax, false), logits, experts, weights);
  EXPECT_EQ(experts[0], 0);
  EXPECT_EQ(experts[1], 1);
  EXPECT_EQ(experts[2], 2);
}

// Tokens of one step share experts in every combination; each row must be
// what that token gives alone, bit for bit, at every step size.
TEST(MoeFfn, EachTokenIsTheSameBitsAloneAndInAnyBatch) {
  const auto model = testing::make_moe_test_model(8, 3, 32, 5);
  const ModelConfig& c = model->config();
  const MoeWeights& w = model->weights().layers[1].moe;
  const int n = 37, d = c.n_embd;
  std::vector<float> x(size_t(n * d));
  uint32_t r = 1;
  for (float& v : x) v = float(int((r = r * 1664525u + 1013904223u) >> 9) % 2001 - 1000) / 500.0f;
  ThreadPool pool(3);
  MatmulScratch ms;
  MoeScratch s;
  std::vector<float> batched(size_t(n * d));
  std::vector<float> alone(static_cast<size_t>(d));
  moe_ffn(c, w, x.data(), n, batched.data(), s, pool, ms);
  for (int t = 0; t < n; ++t) {
    moe_ffn(c, w, x.data() + t * d, 1, alone.data(), s, pool, ms);
    ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + t * d, size_t(d) * 4)) << t;
  }
  std::vector<float> chunk(size_t(5 * d));
  for (int t0 = 2; t0 + 5 <= n; t0 += 5) {  // steps of 5 tokens
    moe_ffn(c, w, x.data() + t0 * d, 5, chunk.data(), s, pool, ms);
    ASSERT_EQ(0, std::memcmp(chunk.data(), batched.data() + t0 * d, chunk.size() * 4)) << t0;
  }
}

// Each expert's output scale (ffn_down_exps.scale) multiplies its product
// before its routing weight: scales of 2 double every output exactly (a
// power of two rounds nothing). The router's own input (Gemma 4) routes the
// tokens: given xn itself it changes nothing, given other rows it routes
// them and the experts still run on xn.
TEST(MoeFfn, ExpertScalesAndTheRoutersOwnInput) {
  const auto model = testing::make_moe_test_model(8, 2, 32, 6);
  const ModelConfig& c = model->config();
  MoeWeights w = model->weights().layers[0].moe;
  const int n = 9, d = c.n_embd;
  std::vector<float> x(size_t(n * d)), other(size_t(n * d));
  uint32_t r = 3;
  for (float& v : x) v = float(int((r = r * 1664525u + 1013904223u) >> 9) % 2001 - 1000) / 500.0f;
  for (float& v : other)
    v = float(int((r = r * 1664525u + 1013904223u) >> 9) % 2001 - 1000) / 500.0f;
  ThreadPool pool(2);
  MatmulScratch ms;
  MoeScratch s;
  std::vector<float> plain(x.size()), out(x.size());
  moe_ffn(c, w, x.data(), n, plain.data(), s, pool, ms);
  moe_ffn(c, w, x.data(), n, out.data(), s, pool, ms, nullptr, x.data());
  EXPECT_EQ(0, std::memcmp(out.data(), plain.data(), out.size() * 4));
  const std::vector<int32_t> picks_of_x(s.experts.begin(), s.experts.begin() + n * 2);
  moe_ffn(c, w, x.data(), n, out.data(), s, pool, ms, nullptr, other.data());
  EXPECT_NE(std::vector<int32_t>(s.experts.begin(), s.experts.begin() + n * 2), picks_of_x);
  w.down_scale.assign(size_t(c.moe.n_expert), 2.0f);
  moe_ffn(c, w, x.data(), n, out.data(), s, pool, ms);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 2.0f * plain[i]) << i;
}

ModelConfig config_of(const gguf::GgufFile& file) { return ModelConfig::from_gguf(file); }

gguf::GgufFile moe_file(const char* arch, std::vector<uint8_t>& bytes) {
  RandomModelSpec spec;
  spec.arch = arch;
  if (std::string(arch) == "gpt-oss") spec.sliding_window = 6;  // its files state one
  bytes = make_random_model(spec).to_bytes();
  return gguf::GgufFile::from_bytes(bytes, "moe");
}

const uint8_t* bytes_of(const WeightView& v) { return static_cast<const uint8_t*>(v.data); }

// Each of two ranks keeps its half of every expert's gate/up rows, of each
// expert's output rows (down), of the shared expert's, of the biases, and
// its heads' sinks; the router stays whole (model/moe_tensor_parallel.h). tensor_parallel_mpi
// checks the logits of 2 and 4 ranks against one process's bits.
TEST(MoeFfn, TensorParallelRanksHoldHalfOfEveryExpert) {
  for (const char* arch : {"qwen3moe", "gpt-oss", "qwen35moe", "qwen3next"}) {
    std::vector<uint8_t> bytes;
    const gguf::GgufFile file = moe_file(arch, bytes);
    const ModelConfig c = config_of(file);
    const ModelWeights whole = ModelWeights::from_gguf(file, c);
    const MoeWeights& w = whole.layers[0].moe;
    const int64_t ff = c.moe.n_ff_exp / 2, d = c.n_embd / 2;
    for (int r = 0; r < 2; ++r) {
      const ModelWeights half = ModelWeights::from_gguf(file, c, r, 2);
      const MoeWeights& m = half.layers[0].moe;
      EXPECT_EQ(bytes_of(m.router), bytes_of(w.router)) << arch;
      EXPECT_EQ(m.router.rows, w.router.rows) << arch;
      for (size_t e = 0; e < w.gate.size(); ++e) {
        EXPECT_EQ(m.gate[e].rows, ff) << arch;
        EXPECT_EQ(bytes_of(m.gate[e]), bytes_of(row_range(w.gate[e], r * ff, ff))) << arch;
        EXPECT_EQ(bytes_of(m.up[e]), bytes_of(row_range(w.up[e], r * ff, ff))) << arch;
        EXPECT_EQ(m.down[e].rows, d) << arch;
        EXPECT_EQ(m.down[e].cols, c.moe.n_ff_exp) << arch;
        EXPECT_EQ(bytes_of(m.down[e]), bytes_of(row_range(w.down[e], r * d, d))) << arch;
      }
      if (w.shared_gate.data) {  // qwen35moe, qwen3next
        EXPECT_EQ(bytes_of(m.shared_up),
                  bytes_of(row_range(w.shared_up, r * c.moe.n_ff_shexp / 2, c.moe.n_ff_shexp / 2)));
        EXPECT_EQ(bytes_of(m.shared_down), bytes_of(row_range(w.shared_down, r * d, d)));
        EXPECT_EQ(bytes_of(m.shared_gate_inp), bytes_of(w.shared_gate_inp));
      }
      if (w.gate_bias.empty()) continue;
      const int64_t last = c.moe.n_expert - 1;  // the last expert's biases, this rank's columns
      EXPECT_EQ(m.gate_bias[size_t(last * ff)], w.gate_bias[size_t(last * 2 * ff + r * ff)]);
      EXPECT_EQ(m.down_bias[size_t(last * d + d - 1)],
                w.down_bias[size_t(last * 2 * d + r * d + d - 1)]);
      const std::vector<float>& sinks = half.layers[0].attn_sinks;
      ASSERT_EQ(int(sinks.size()), c.n_head / 2);
      EXPECT_EQ(sinks[0], whole.layers[0].attn_sinks[size_t(r * c.n_head / 2)]);
    }
  }
}

}  // namespace
}  // namespace kvforge
