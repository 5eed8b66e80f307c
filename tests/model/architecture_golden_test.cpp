// Every architecture and RoPE variant against llama.cpp's logits:
// data/architectures holds one random-weight f32 model per variant (tiny
// shapes, 259-token byte vocabulary, made by tools/arch_goldens/make_goldens.py
// with `kvforge make-model`) and llama.cpp's logits for a 17-token prompt and 16
// greedy steps (f32 KV cache, no flash attention), reaching position 32: past
// the sliding windows (8 positions) and the original contexts of the scaled
// RoPE variants (16 positions).
//
// Bound: 1e-4 max |logit difference|. Both engines compute in f32 in
// different orders (relative error ~sqrt(n)·2^-24 per op, a few dozen ops in
// series, logits of magnitude ~10): ~1e-5, and the bound leaves a decade for
// the transcendental functions (tanh, exp, cos/sin), which the two engines
// evaluate with different code. Every greedy pick must equal llama.cpp's.
//
// Gemma's GELU goes through f16 in both engines (core/ops/activation.h), which
// makes it a step function: where the engines' f32 inputs differ in the last
// bit (probability ~2^-13 per element: an f32 ulp against an f16 step) the
// rounding can flip, moving one FFN activation by an f16 step (relative
// 2^-11) and, through the K/V it feeds, every later row. Over the ~13K GELUs
// of a run that happens a few times. So for GELU models every row must be
// within 1e-2: a flip's reach is ~2^-11 of an activation times the gains to
// the logits (the scaled embeddings and the next-byte output make them ~10),
// ~5e-3 at worst; the greedy margins of these files (≥ 0.15) are far above
// it. The engine, in f32 as llama.cpp, flips rarely: half its rows at least
// (the median) must still be within 1e-4. The double-precision reference
// flips more often and is held to 1e-2 only.
//
// qwen3moe (a mixture of experts) is held to the same bound: a token's
// experts are picked by comparing router probabilities, and the engines
// would pick differently only where the k-th and (k+1)-th of them lie within
// their rounding difference (~1e-7 relative); over the ~100 (token, layer)
// picks of a run, with gaps spread over ~0.1, that chance is ~1e-4, and a
// different pick would move the logits far beyond the bound (a failure, not
// a tolerance to widen).
//
// The plain double-precision reference forward pass (reference_forward.cpp,
// written from the definitions) is held to the same files, so that the two
// oracles agree with each other as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "golden_logits.h"
#include "model/model.h"
#include "reference_forward.h"
#include "testdata.h"

namespace kvforge {
namespace {

// KVFORGE_ARCH_GOLDEN_DIR points the tests at other goldens (while making new ones).
const std::filesystem::path kDir =
    std::getenv("KVFORGE_ARCH_GOLDEN_DIR")
        ? std::filesystem::path(std::getenv("KVFORGE_ARCH_GOLDEN_DIR"))
        : testing::source_dir() / "tests/model/data/architectures";
constexpr float kBound = 1e-4f;
constexpr float kGeluFlipBound = 1e-2f;

// Checks the rows' max |difference| against the bounds in the header comment;
// `in_f32`: the engine (whose median row must stay within kBound for GELU models).
void expect_within_bounds(const Model& model, std::vector<float> row_diffs, bool in_f32) {
  const float worst = *std::max_element(row_diffs.begin(), row_diffs.end());
  if (model.config().ffn_act != FfnActivation::GeluTanh) {
    EXPECT_LE(worst, kBound);
    return;
  }
  EXPECT_LE(worst, kGeluFlipBound);
  if (in_f32) {
    std::nth_element(row_diffs.begin(), row_diffs.begin() + ptrdiff_t(row_diffs.size() / 2),
                     row_diffs.end());
    EXPECT_LE(row_diffs[row_diffs.size() / 2], kBound) << "median row";
  }
}

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    const std::string file = entry.path().filename().string();
    if (file.ends_with(".logits.bin")) names.push_back(file.substr(0, file.size() - 11));
  }
  std::sort(names.begin(), names.end());
  return names;
}

int greedy_pick(std::span<const float> row) {
  return int(std::max_element(row.begin(), row.end()) - row.begin());
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

TEST(ArchitectureGolden, CoversEveryArchitectureAndRopeVariant) {
  const std::vector<std::string> names = golden_names();
  if (std::getenv("KVFORGE_ARCH_GOLDEN_DIR")) GTEST_SKIP() << "other goldens";
  for (const char* want :
       {"llama", "llama3-rope-freqs", "llama-linear", "llama-yarn", "llama-fused-qkv", "qwen2",
        "qwen3", "qwen3-yarn", "gemma2", "gemma3", "phi3-longrope", "qwen3moe"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(ArchitectureGolden, EngineMatchesLlamaCpp) {
  for (const std::string& name : golden_names()) {
    SCOPED_TRACE(name);
    const auto model = Model::load(kDir / (name + ".gguf"));
    const testing::GoldenLogits g = testing::read_golden_logits(kDir / (name + ".logits.bin"));
    ASSERT_EQ(g.n_vocab, model->config().n_vocab);
    const std::vector<float> ours = testing::run_golden_tokens(*model, g, 2);
    std::vector<float> diffs;
    for (int i = 0; i < g.rows(); ++i) {
      const std::span<const float> row(ours.data() + size_t(i) * size_t(g.n_vocab),
                                       size_t(g.n_vocab));
      diffs.push_back(max_abs_diff(row, g.row(i)));
      if (i >= g.n_prompt - 1 && i + 1 < g.rows()) {
        EXPECT_EQ(greedy_pick(row), g.tokens[size_t(i + 1)]) << "greedy pick after row " << i;
      }
    }
    expect_within_bounds(*model, diffs, /*in_f32=*/true);
    std::printf("%-18s max |logit - llama.cpp| = %.2e\n", name.c_str(),
                double(*std::max_element(diffs.begin(), diffs.end())));
  }
}

TEST(ArchitectureGolden, ReferenceForwardMatchesLlamaCpp) {
  for (const std::string& name : golden_names()) {
    SCOPED_TRACE(name);
    const auto model = Model::load(kDir / (name + ".gguf"));
    const testing::GoldenLogits g = testing::read_golden_logits(kDir / (name + ".logits.bin"));
    testing::ReferenceForward ref(*model, g.rows());
    std::vector<float> diffs;
    for (int i = 0; i < g.rows(); ++i)
      diffs.push_back(max_abs_diff(ref.forward(g.tokens[size_t(i)], i), g.row(i)));
    expect_within_bounds(*model, diffs, /*in_f32=*/false);
  }
}

}  // namespace
}  // namespace kvforge
