// Quantized and half-precision weights against the scalar reference, which
// runs on the same weights dequantized to f32 — so any difference comes from
// how the engine computes, not from the weights' own rounding.
//
// Tolerances:
//  - F16, BF16: activations stay f32 and weights dequantize exactly, so the
//    F32 bound applies: 1e-4.
//  - Q8_0, Q4_0, Q4_K, Q6_K, Q2_K, Q3_K, IQ4_XS, IQ4_NL, Q5_0, Q5_1, Q4_1:
//    the matmul quantizes activations to 8 bits per block (Q8_0 / Q8_K): per
//    element an error uniform in ±amax/254, i.e. a standard deviation of
//    amax/(127·√12) ≈ 0.7 % of the activations' RMS for Gaussian-like blocks
//    (amax ≈ 3·RMS). A dot product inherits that relative error; about nine
//    matmuls lie in series between embedding and logits here, so logits move
//    by ~√9 · 0.7 % ≈ 2 % of their RMS (1σ). The bound is the ~4σ tail over
//    all rows: max abs diff ≤ 8 % of the RMS of the reference logits
//    (measured: 4.1-6.3 %). A wrong scale, nibble order or sub-block index
//    moves logits by a sizeable fraction of their RMS and fails it;
//    bit-level layout errors are the kernel tests' business. The greedy
//    token must agree wherever the reference's top-2 margin exceeds twice
//    the bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/kernels/weight_repack.h"
#include "engine/sequence_runner.h"
#include "reference_forward.h"
#include "test_models.h"

namespace kvforge {
namespace {

struct QuantizedCase {
  GgmlType type;
  float tolerance;  // absolute for f16/bf16; a fraction of the logits' RMS for quantized types
  bool relative;
};

float rms(const std::vector<float>& v) {
  double ss = 0;
  for (float x : v) ss += double(x) * x;
  return float(std::sqrt(ss / double(v.size())));
}

class ForwardQuantizedTest : public ::testing::TestWithParam<QuantizedCase> {};

TEST_P(ForwardQuantizedTest, LogitsMatchReferenceOnDequantizedWeights) {
  const QuantizedCase c = GetParam();
  RandomModelSpec spec;  // rows of 256 so that the K-quants' super-blocks fit
  spec.name = std::string(type_name(c.type));
  spec.n_embd = 256;
  spec.n_head = 4;
  spec.n_kv_head = 2;
  spec.n_ff = 512;
  spec.weight_type = c.type;
  spec.seed = 11;
  const auto model = testing::make_test_model(spec);
  // On the AVX-512 level the layer matrices of most types are regrouped at
  // load (weight_repack.h), so this also checks that path against the oracle.
  const WeightView& down = model->weights().layers[0].ffn_down.parts[0];
  EXPECT_EQ(down.layout, regrouping_preferred() ? regrouped_layout(c.type, down.rows, down.cols)
                                                : WeightLayout::Native);
  EXPECT_EQ(model->weights().token_embd.layout, WeightLayout::Native);
  ThreadPool pool(2);
  SequenceRunner runner(*model, pool, {.n_ctx = 64, .max_batch = 512, .kv_format = {}});
  testing::ReferenceForward ref(*model, 64);
  const int n_vocab = model->config().n_vocab;
  const std::vector<int32_t> prompt = {1, 87, 104, 111, 35, 100, 107, 104, 118, 35, 119, 107};
  const auto prompt_logits = runner.prefill(prompt, /*all_logits=*/true);
  std::vector<float> got(prompt_logits.end() - n_vocab, prompt_logits.end());
  // The bound is fixed from the first row of the reference, before any comparison.
  std::vector<std::vector<float>> want_prompt;
  for (size_t i = 0; i < prompt.size(); ++i)
    want_prompt.push_back(ref.forward(prompt[i], int32_t(i)));
  const float bound = c.relative ? c.tolerance * rms(want_prompt[0]) : c.tolerance;
  float worst = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::vector<float>& want = want_prompt[i];
    for (int j = 0; j < n_vocab; ++j)
      worst = std::max(worst, std::abs(prompt_logits[i * n_vocab + size_t(j)] - want[size_t(j)]));
  }
  for (int step = 0; step < 16; ++step) {
    const int32_t token = int32_t(std::max_element(got.begin(), got.end()) - got.begin());
    const std::vector<float> want = ref.forward(token, int32_t(prompt.size()) + step);
    const auto next = runner.decode(token);
    got.assign(next.begin(), next.end());
    std::vector<float> sorted = want;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    const int want_top = int(std::max_element(want.begin(), want.end()) - want.begin());
    const int got_top = int(std::max_element(got.begin(), got.end()) - got.begin());
    if (sorted[0] - sorted[1] > 2 * bound) {
      EXPECT_EQ(got_top, want_top) << "step " << step;
    }
    for (int j = 0; j < n_vocab; ++j)
      worst = std::max(worst, std::abs(got[size_t(j)] - want[size_t(j)]));
  }
  std::printf("[ quantized ] %s weights: max |logit diff| = %.3g, bound %.3g (logit RMS %.3g)\n",
              spec.name.c_str(), worst, bound, rms(want_prompt[0]));
  EXPECT_LE(worst, bound);
}

INSTANTIATE_TEST_SUITE_P(
    Types, ForwardQuantizedTest,
    ::testing::Values(
        QuantizedCase{GgmlType::F16, 1e-4f, false}, QuantizedCase{GgmlType::BF16, 1e-4f, false},
        QuantizedCase{GgmlType::Q8_0, 0.08f, true}, QuantizedCase{GgmlType::Q4_0, 0.08f, true},
        QuantizedCase{GgmlType::Q4_K, 0.08f, true}, QuantizedCase{GgmlType::Q6_K, 0.08f, true},
        QuantizedCase{GgmlType::IQ4_NL, 0.08f, true}, QuantizedCase{GgmlType::Q5_0, 0.08f, true},
        QuantizedCase{GgmlType::Q5_1, 0.08f, true}, QuantizedCase{GgmlType::Q4_1, 0.08f, true},
        QuantizedCase{GgmlType::Q2_K, 0.08f, true}, QuantizedCase{GgmlType::Q3_K, 0.08f, true},
        QuantizedCase{GgmlType::IQ4_XS, 0.08f, true}),
    [](const auto& param_info) { return std::string(type_name(param_info.param.type)); });

}  // namespace
}  // namespace kvforge
