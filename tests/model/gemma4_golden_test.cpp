// Gemma 4 against llama.cpp's logits (data/gemma4, made by
// tools/arch_goldens/make_gemma4_goldens.py): a random-weight f32 file of 9
// layers (windows of 8 on six, full attention on three), the last 3 sharing
// K/V (6 and 7 read layer 4's, 8 reads layer 5's), per-layer embeddings,
// proportional RoPE on the full layers, output scales and a final soft-cap;
// 17 prompt tokens and 16 greedy steps reach position 32, four windows.
//
// Bound. Both engines round GELU's input to f16 (core/ops/activation.h), a
// step function: where their f32 inputs differ in the last bits the rounding
// can flip and move one activation by an f16 step, and every later row with
// it through the K/V it feeds (architecture_golden_test.cpp: ~5e-3 at most
// on such logits). This file flips more often than the 3-layer goldens
// there: each row passes 9 layers of 144 GELUs (the FFN's 128, the
// per-layer embedding's 16) whose inputs, after up to 9 layers, differ by
// several ulps (a flip chance ~2^-10 each: about one flip per row), and
// Gemma 4 does not scale its attention scores (scores ~sqrt(head_dim) = 5.7
// times gemma3's for the same Q/K), so a flip in K/V moves the softmax more.
// (A 9-layer gemma3 file of the same shapes shows the same: median row 4e-4.)
// So: every row within 2e-2 (a few flips' reach) and the median row within
// 5e-3 (one flip's). Greedy picks must
// equal llama.cpp's where its margin exceeds 4e-2, twice the bound (on this
// file: all of them, smallest margin 0.14).
//
// gemma4-swa-heads-f32: the same shape with the windowed layers' heads 16
// wide beside the full layers' 32 (as real Gemma 4 files: 256 beside 512),
// under the same bounds (smallest margin 0.075).
//
// gemma4-double-wide-f32: the same shape with use_double_wide_mlp (Gemma 4
// E2B/E4B): the 3 shared-KV layers' FFNs have 256 rows beside the others'
// 128 (feed_forward_length one entry per layer), under the same bounds: 384
// more GELUs per row than gemma4-f32 (3 layers of 128 more), the same order
// of flips.
// gemma4-kv-heads-f32: gemma4-swa-heads-f32 with 1 KV head in the full
// layers and 2 in the windowed ones (attention.head_count_kv per layer, as
// the 31B and 26B-A4B files), under the same bounds (smallest margin in the
// README).
//
// gemma4-moe-f32: the MoE variant (6 layers, windows of 8 on four, the last
// 3 sharing K/V; 8 experts of 32 rows, 2 per token, beside each dense FFN;
// per-layer embeddings of 32) under the same bounds: 64 more GELUs per row
// (the two experts'), max 5.2e-3; its picks above 4e-2 (smallest margin
// 0.005) must equal llama.cpp's.
//
// Prefill runs in one pass and in chunks of 5 (across the window's edge),
// through SequenceRunner; tests/engine/engine_schedules_test.cpp holds the
// paged engine (whose shared layers hold no blocks) to it bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>

#include "golden_logits.h"
#include "model/model.h"
#include "quantization_noise.h"
#include "testdata.h"

namespace kvforge {
namespace {

constexpr float kGemma4Bound = 2e-2f;
constexpr float kGemma4MedianBound = 5e-3f;
constexpr float kGemma4PickMargin = 4e-2f;
constexpr float kGemma4NoiseRatio = 2.0f;

// KVFORGE_GEMMA4_DIR points the test at other goldens (while trying shapes or seeds).
const std::filesystem::path kGemma4Dir =
    std::getenv("KVFORGE_GEMMA4_DIR") ? std::filesystem::path(std::getenv("KVFORGE_GEMMA4_DIR"))
                                      : testing::source_dir() / "tests/model/data/gemma4";

// max |llama.cpp's logit - ours| over row i.
float row_difference(const testing::GoldenLogits& g, const std::vector<float>& ours, int i) {
  const std::span<const float> want = g.row(i);
  const float* got = ours.data() + size_t(i) * size_t(g.n_vocab);
  float d = 0;
  for (int j = 0; j < g.n_vocab; ++j) d = std::max(d, std::abs(want[size_t(j)] - got[j]));
  return d;
}

// Row i's argmax is llama.cpp's greedy pick there, where row i picks one
// (the prompt's last row on) and llama.cpp's margin exceeds `margin`.
void expect_pick(const testing::GoldenLogits& g, const std::vector<float>& ours, int i,
                 float margin) {
  if (i < g.n_prompt - 1 || i + 1 == g.rows()) return;
  const std::span<const float> want = g.row(i);
  std::vector<float> top(want.begin(), want.end());
  std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<>());
  if (top[0] - top[1] <= margin) return;
  const float* got = ours.data() + size_t(i) * size_t(g.n_vocab);
  EXPECT_EQ(int(std::max_element(got, got + g.n_vocab) - got), g.tokens[size_t(i + 1)])
      << "greedy pick after row " << i;
}

TEST(Gemma4Golden, ModelHasSharedKvAndPerLayerEmbeddings) {
  const auto model = Model::load(kGemma4Dir / "gemma4-f32.gguf");
  const ModelConfig& c = model->config();
  ASSERT_EQ(c.arch, Architecture::Gemma4);
  EXPECT_EQ(c.n_layer, 9);
  EXPECT_EQ(c.n_kv_shared, 3);
  EXPECT_EQ(c.n_embd_per_layer, 16);
  EXPECT_EQ(c.n_kv_layers(), 6);
  // Windowed shared layers read layer 4 (the last windowed KV layer), the full one layer 5.
  EXPECT_EQ(c.kv_source(6), 4);
  EXPECT_EQ(c.kv_source(7), 4);
  EXPECT_EQ(c.kv_source(8), 5);
  EXPECT_EQ(c.kv_source(3), 3);
  EXPECT_FALSE(c.owns_kv(8));
  EXPECT_EQ(c.window(4), 8);
  EXPECT_EQ(c.window(5), 0);
  EXPECT_EQ(c.attn_scale, 1.0f);
}

TEST(Gemma4Golden, WindowedLayersHaveTheirOwnHeadSize) {
  const auto model = Model::load(kGemma4Dir / "gemma4-swa-heads-f32.gguf");
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.head_dim_swa, 16);
  EXPECT_EQ(c.layer_head_dim(4), 16);
  EXPECT_EQ(c.layer_head_dim(5), 32);
  EXPECT_EQ(c.layer_rope_dim(4), 16);
  EXPECT_EQ(c.layer_head_dim(7), 16);  // shared, reading layer 4's K/V
  // 2 full layers of 2 KV heads of 32, 4 windowed of 16: K and V, f32.
  EXPECT_EQ(c.kv_bytes_per_token(4), size_t(2 * (2 * 64 + 4 * 32) * 4));
}

TEST(Gemma4Golden, DoubleWideLayersHaveTwiceTheFfnRows) {
  const auto model = Model::load(kGemma4Dir / "gemma4-double-wide-f32.gguf");
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.n_ff, 256);  // the widest layer's: scratch fits every layer
  for (int l = 0; l < c.n_layer; ++l) {
    const int want = c.owns_kv(l) ? 128 : 256;  // the shared-KV layers 6-8 are double wide
    EXPECT_EQ(c.layer_n_ff(l), want) << "layer " << l;
    EXPECT_EQ(model->weights().layers[size_t(l)].ffn_down.cols, want) << "layer " << l;
  }
}

TEST(Gemma4Golden, WindowedLayersHaveTheirOwnKvHeadCount) {
  const auto model = Model::load(kGemma4Dir / "gemma4-kv-heads-f32.gguf");
  const ModelConfig& c = model->config();
  EXPECT_EQ(std::make_tuple(c.n_kv_head, c.n_kv_head_swa, c.head_dim_swa),
            std::make_tuple(1, 2, 16));
  EXPECT_EQ(c.layer_n_kv_head(7), 2);  // shared, reading layer 4's K/V
  EXPECT_EQ(c.layer_n_kv_head(8), 1);  // shared, reading layer 5's
  // 2 full layers of 1 KV head of 32, 4 windowed of 2 of 16: K and V, f32.
  EXPECT_EQ(c.kv_bytes_per_token(4), size_t(2 * (2 * 32 + 4 * 32) * 4));
}

TEST(Gemma4Golden, MoeVariantHasExpertsBesideTheDenseFfn) {
  const auto model = Model::load(kGemma4Dir / "gemma4-moe-f32.gguf");
  const ModelConfig& c = model->config();
  // 6 layers, the last 3 shared: 3 and 4 read layer 1's K/V, 5 reads layer 2's.
  EXPECT_EQ(std::make_tuple(c.n_layer, c.n_kv_shared, c.kv_source(3), c.kv_source(5)),
            std::make_tuple(6, 3, 1, 2));
  // 8 experts of 32 rows, 2 per token.
  EXPECT_EQ(std::make_tuple(c.moe.n_expert, c.moe.n_expert_used, c.moe.n_ff_exp),
            std::make_tuple(8, 2, 32));
  EXPECT_EQ(c.moe.gating, ExpertGating::SoftmaxThenTopK);
  EXPECT_TRUE(c.moe.norm_topk);
  const LayerWeights& l = model->weights().layers[5];
  EXPECT_EQ(l.ffn_gate.rows, 128);  // the dense FFN
  EXPECT_EQ(l.moe.gate.size(), 8u);
  EXPECT_EQ(l.moe.down_scale.size(), 8u);
  EXPECT_EQ(l.moe.router_in_scale.size(), 64u);
}

class Gemma4GoldenFile : public ::testing::TestWithParam<const char*> {};

TEST_P(Gemma4GoldenFile, LogitsAndGreedyTokensMatchLlamaCpp) {
  const std::string name = GetParam();
  const testing::GoldenLogits g = testing::read_golden_logits(kGemma4Dir / (name + ".logits.bin"));
  const auto model = Model::load(kGemma4Dir / (name + ".gguf"));
  ASSERT_EQ(model->config().n_vocab, g.n_vocab);
  ASSERT_GT(g.rows(), 3 * model->config().sliding_window);
  for (const int max_batch : {512, 5}) {
    SCOPED_TRACE(max_batch);
    const std::vector<float> ours = testing::run_golden_tokens(*model, g, 2, max_batch);
    std::vector<float> diffs;
    for (int i = 0; i < g.rows(); ++i) {
      diffs.push_back(row_difference(g, ours, i));
      expect_pick(g, ours, i, kGemma4PickMargin);
    }
    const float worst = *std::max_element(diffs.begin(), diffs.end());
    EXPECT_LE(worst, kGemma4Bound);
    std::nth_element(diffs.begin(), diffs.begin() + ptrdiff_t(diffs.size() / 2), diffs.end());
    EXPECT_LE(diffs[diffs.size() / 2], kGemma4MedianBound) << "median row";
    std::printf("%s chunks of %3d: max |logit - llama.cpp| = %.2e\n", name.c_str(), max_batch,
                double(worst));
  }
}

INSTANTIATE_TEST_SUITE_P(Files, Gemma4GoldenFile,
                         ::testing::Values("gemma4-f32", "gemma4-swa-heads-f32",
                                           "gemma4-double-wide-f32", "gemma4-kv-heads-f32",
                                           "gemma4-moe-f32"),
                         [](const auto& p) {
                           std::string n = p.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// Files quantized by llama-quantize:
//  - gemma4-q8_0: gemma4-swa-heads-f32 in Q8_0; gemma4-q4_k_m: the same
//    layout 256 wide, heads of 64 and 32, in Q4_K_M with its Q5_0 / Q6_K /
//    f16 fallbacks. The f32 engines already differ by GELU's f16 flips
//    (above), so activations differ in their last bits from the first layer
//    on and the q8_0 rounding of matmul inputs crosses from the first rows.
//  - gemma4-moe-q8_0 (the MoE f32 golden in Q8_0) and gemma4-moe-q4_k_m (a
//    256-wide MoE file in Q4_K / Q6_K): both engines quantize each matmul
//    input by the same rule and take exact integer block products, so while
//    their f32 inputs are the same bits their logits agree within 1e-4 (max
//    6e-6): the 17 prompt rows and the first decode step. From 19 keys on an
//    f32 sum goes in a different order, a GELU input flips (as above), and
//    the flipped activation can cross a q8 rounding step in the next matmul.
// After the first crossing the two runs are independent quantizations of
// one computation, checked as quantization_noise.h does against kvforge's
// own run of the dequantized weights.
struct Gemma4Quantized {
  const char* name;
  int first_crossing_row;
  float exact_bound;  // rows before the crossing; the f32 goldens' bound
};

class Gemma4QuantizedGolden : public ::testing::TestWithParam<Gemma4Quantized> {};

TEST_P(Gemma4QuantizedGolden, LogitsWithinQuantizationNoiseOfLlamaCpp) {
  const Gemma4Quantized& q = GetParam();
  testing::expect_quantized_golden_within_noise(
      kGemma4Dir, q.name, {q.first_crossing_row, q.exact_bound, kGemma4NoiseRatio});
}

INSTANTIATE_TEST_SUITE_P(Files, Gemma4QuantizedGolden,
                         ::testing::Values(Gemma4Quantized{"gemma4-q8_0", 0, kGemma4Bound},
                                           Gemma4Quantized{"gemma4-q4_k_m", 0, kGemma4Bound},
                                           Gemma4Quantized{"gemma4-moe-q8_0", 18, 1e-4f},
                                           Gemma4Quantized{"gemma4-moe-q4_k_m", 18, 1e-4f}),
                         [](const auto& p) { return testing::golden_test_name(p.param.name); });

}  // namespace
}  // namespace kvforge
