// The engine's batched forward pass against the scalar reference forward pass
// (reference_forward.h) on random models of several shapes.
//
// Tolerance for F32 weights: 1e-4 max abs on logits of magnitude ~1-5. Both
// sides compute in f32 with different summation orders (SIMD lanes, tiled
// online softmax vs double accumulation); the observed gap is ~1e-6, so 1e-4
// leaves margin without hiding any real bug (a wrong RoPE pair, mask or head
// mapping moves logits by 1e-2 or more).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/sequence_runner.h"
#include "reference_forward.h"
#include "test_models.h"

namespace kvforge {
namespace {

struct Shape {
  const char* label;
  int n_embd, n_layer, n_head, n_kv_head, n_ff;
  bool tied;
  const char* arch = "llama";
  int sliding_window = 0;  // 0: none
  int head_dim = 0;        // 0: n_embd / n_head
  const char* rope_scaling = "";
  // GELU through f16 (gemma) is a step function: where the two passes' f32
  // inputs differ in the last bit, its rounding can flip (see
  // architecture_golden_test.cpp for the bound).
  float tol = 1e-4f;
};

float max_abs_diff(std::span<const float> a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

int argmax(std::span<const float> v) {
  return int(std::max_element(v.begin(), v.end()) - v.begin());
}

class ForwardOracleTest : public ::testing::TestWithParam<Shape> {};

void check_against_reference(const Model& model, int n_threads, int max_batch, float tol) {
  ThreadPool pool(n_threads);
  SequenceRunner runner(model, pool, {.n_ctx = 64, .max_batch = max_batch, .kv_format = {}});
  testing::ReferenceForward ref(model, 64);
  const std::vector<int32_t> prompt = {1, 72, 101, 108, 108, 111, 44, 35, 119, 111, 114, 108, 100};
  const int n_vocab = model.config().n_vocab;
  auto logits = runner.prefill(prompt, /*all_logits=*/true);
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::vector<float> want = ref.forward(prompt[i], int32_t(i));
    EXPECT_LE(max_abs_diff(logits.subspan(i * n_vocab, n_vocab), want), tol) << "prompt pos " << i;
  }
  int32_t token = argmax(logits.subspan((prompt.size() - 1) * n_vocab, n_vocab));
  for (int step = 0; step < 32; ++step) {
    const int32_t pos = int32_t(prompt.size()) + step;
    const std::vector<float> want = ref.forward(token, pos);
    auto got = runner.decode(token);
    ASSERT_LE(max_abs_diff(got, want), tol) << "decode step " << step;
    token = argmax(got);
  }
}

TEST_P(ForwardOracleTest, F32LogitsMatchReferenceForPromptAnd32DecodeSteps) {
  const Shape s = GetParam();
  RandomModelSpec spec;
  spec.name = s.label;
  spec.n_embd = s.n_embd;
  spec.n_layer = s.n_layer;
  spec.n_head = s.n_head;
  spec.n_kv_head = s.n_kv_head;
  spec.n_ff = s.n_ff;
  spec.tied_output = s.tied;
  spec.arch = s.arch;
  spec.sliding_window = s.sliding_window;
  spec.head_dim = s.head_dim;
  spec.rope_scaling = s.rope_scaling;
  if (!spec.rope_scaling.empty()) {
    spec.rope_factor = 4;
    spec.rope_orig_ctx = 16;
  }
  spec.seed = 7;
  const auto model = testing::make_test_model(spec);
  ASSERT_EQ(model->config().tied_output, s.tied);
  check_against_reference(*model, /*n_threads=*/1, /*max_batch=*/512, s.tol);
  check_against_reference(*model, /*n_threads=*/3, /*max_batch=*/5, s.tol);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ForwardOracleTest,
    ::testing::Values(
        Shape{"mha_tied", 64, 2, 4, 4, 128, true}, Shape{"gqa_untied", 64, 2, 4, 2, 160, false},
        Shape{"gqa8x2_untied", 128, 3, 8, 2, 96, false}, Shape{"mqa_tied", 96, 2, 6, 1, 64, true},
        Shape{"qwen2_gqa", 64, 2, 4, 2, 128, false, "qwen2"},
        // Windows of 6 and chunks of 5: queries past the
        // window, chunks across its edge.
        Shape{"mistral_window", 64, 2, 4, 2, 128, false, "llama", 6},
        Shape{"qwen3_head96", 64, 2, 4, 2, 128, false, "qwen3", 0, 24, "yarn"},
        Shape{"gemma2_window", 64, 3, 4, 2, 128, true, "gemma2", 6, 0, "", 1e-2f},
        Shape{"gemma3_window", 64, 3, 4, 2, 128, true, "gemma3", 6, 32, "linear", 1e-2f},
        Shape{"phi3_window", 96, 2, 4, 4, 128, false, "phi3", 7},
        Shape{"qwen3moe_8x2", 64, 3, 4, 2, 128, false, "qwen3moe", 0, 32},
        // Sinks, biases, the clamped SwiGLU of 8 experts (2 per token), YaRN,
        // windows of 6 on the even layers.
        Shape{"gpt_oss_window", 64, 3, 4, 2, 128, false, "gpt-oss", 6, 32, "yarn"}),
    [](const auto& param_info) { return std::string(param_info.param.label); });

}  // namespace
}  // namespace kvforge
