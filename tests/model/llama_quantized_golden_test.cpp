// kvforge on files that llama.cpp's llama-quantize wrote, against llama.cpp's
// own logits for them: data/llama_quantized holds one random-weight llama model
// (n_embd 256, 1 layer, 4 heads / 1 KV head, n_ff 128, 259-token byte
// vocabulary; its output projection favours the next byte so that the logits
// are peaked) as F32 and quantized by llama-quantize to each type or mixture,
// and llama.cpp's logits (f32 KV, no flash attention) for a 17-token prompt and
// 16 greedy steps. Generator: tools/llama_golden/make_goldens.py.
//
// Bound on max |logit difference|, from the model's magnitudes:
//  - f32 rounding. Both engines compute in f32, in different orders: relative
//    error ~ sqrt(n) * 2^-24 ~ 1e-6 per matmul, about a dozen ops in series.
//    B_f32 = 1e-5 * max |logit| (10x that).
//  - Activation rounding flips (quantized weights only). Both engines quantize
//    a matmul's input to 8 bits per block exactly as llama.cpp's x86 code does
//    (Q8_0 / Q8_K), but their f32 activations may differ in the last bits, so an
//    element that sits on a rounding boundary can round up in one engine and
//    down in the other: one input moves by a quantum d = amax / 127 of its
//    block. With amax <= 4x the block's RMS, that moves the matmul's output by
//    at most a fraction e = 4 / (127 sqrt(n_in)) of its norm (n_in: its input
//    length; the shortest, ffn_down's n_ff, is the worst). Taking that output
//    as no larger than the residual it joins, the final norm's output x
//    (norm sqrt(n_embd) * |g|) moves by at most e * max|g| * sqrt(n_embd), and a
//    logit, by Cauchy-Schwarz, by at most u = that * max_j ||W_out[j]||.
//    (A flip inside the output projection itself moves a logit by
//    max |W_out| * d, less than u.) A flip needs the engines to differ on an
//    element within ~1e-6 of a boundary: about 1e-4 of the elements, a few in a
//    whole run, rarely two reaching the same row. B = B_f32 + 2u.
// The greedy picks must equal llama.cpp's at every step; each file's smallest
// top-1 / top-2 margin is checked to exceed 2B, so that no difference within the
// bound could reorder them.
//
// Every file present is tested: a type kvforge cannot load yet fails here until
// its format lands (also when only a fallback type inside a file is missing:
// e.g. q4_k_s holds a Q5_0 ffn_down, whose rows of 128 do not fit Q4_K).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "golden_logits.h"
#include "model/model.h"
#include "testdata.h"

namespace kvforge {
namespace {

const std::filesystem::path kLlamaQuantizedDir =
    testing::source_dir() / "tests/model/data/llama_quantized";

std::vector<std::string> llama_quantized_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kLlamaQuantizedDir)) {
    const std::string file = entry.path().filename().string();
    if (file.ends_with(".logits.bin")) names.push_back(file.substr(0, file.size() - 11));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Calls f(row) with each row of a tensor dequantized to f32.
template <class F>
void for_each_row(const gguf::GgufFile& file, const std::string& name, F f) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (!t) throw std::runtime_error(file.name() + ": no tensor " + name);
  const int64_t cols = int64_t(t->dims[0]);
  const uint64_t rows = t->n_elements / uint64_t(cols);
  const auto data = file.tensor_data(*t);
  const size_t rb = row_bytes(t->type, size_t(cols));
  std::vector<float> row(static_cast<size_t>(cols));
  for (uint64_t r = 0; r < rows; ++r) {
    dequantize_row(t->type, data.data() + r * rb, row.data(), cols);
    f(std::span<const float>(row));
  }
}

// B = B_f32 + 2u (header comment).
float logit_bound(const gguf::GgufFile& file, const testing::GoldenLogits& g) {
  float max_logit = 0;
  for (float x : g.logits) max_logit = std::max(max_logit, std::abs(x));
  const float b_f32 = 1e-5f * max_logit;
  uint64_t n_in = 0;  // shortest input of a matmul with quantized weights
  for (const gguf::TensorInfo& t : file.tensors())
    if (t.dims.size() == 2 && t.type != GgmlType::F32)
      n_in = n_in ? std::min(n_in, t.dims[0]) : t.dims[0];
  if (n_in == 0) return b_f32;
  const std::string w_out =
      file.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
  double max_row_norm = 0, max_g = 0, n_embd = 0;
  for_each_row(file, w_out, [&](std::span<const float> row) {
    double ss = 0;
    for (float x : row) ss += double(x) * x;
    max_row_norm = std::max(max_row_norm, std::sqrt(ss));
  });
  for_each_row(file, "output_norm.weight", [&](std::span<const float> row) {
    n_embd = double(row.size());
    for (float x : row) max_g = std::max(max_g, double(std::abs(x)));
  });
  const double e = 4 / (127 * std::sqrt(double(n_in)));
  const double u = e * max_g * std::sqrt(n_embd) * max_row_norm;
  return b_f32 + float(2 * u);
}

class LlamaQuantizedGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaQuantizedGoldenTest, LogitsAndGreedyTokensMatchLlamaCpp) {
  const std::string name = GetParam();
  const testing::GoldenLogits g =
      testing::read_golden_logits(kLlamaQuantizedDir / (name + ".logits.bin"));
  const auto model = Model::load(kLlamaQuantizedDir / (name + ".gguf"));
  ASSERT_EQ(model->config().n_vocab, g.n_vocab);
  const float bound = logit_bound(gguf::GgufFile::open(kLlamaQuantizedDir / (name + ".gguf")), g);
  for (int threads : {1, 2}) {
    const std::vector<float> ours = testing::run_golden_tokens(*model, g, threads);
    float worst = 0, min_margin = INFINITY;
    for (int row = 0; row < g.rows(); ++row) {
      const auto want = g.row(row);
      const float* got = ours.data() + size_t(row) * size_t(g.n_vocab);
      for (int j = 0; j < g.n_vocab; ++j)
        worst = std::max(worst, std::abs(want[size_t(j)] - got[j]));
      if (row < g.n_prompt - 1 || row + 1 == g.rows()) continue;
      std::vector<float> top(want.begin(), want.end());
      std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<>());
      min_margin = std::min(min_margin, top[0] - top[1]);
      const int picked = int(std::max_element(got, got + g.n_vocab) - got);
      EXPECT_EQ(picked, g.tokens[size_t(row + 1)]) << name << ": greedy pick after row " << row;
    }
    EXPECT_LE(worst, bound) << name << " with " << threads << " threads";
    EXPECT_GT(min_margin, 2 * bound) << name << ": the golden's greedy margins are too small";
    std::printf(
        "[ llama-quantized ] %-7s %d threads: max |logit diff| %.3g, bound %.3g, "
        "smallest greedy margin %.3g\n",
        name.c_str(), threads, worst, bound, min_margin);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaQuantizedGoldenTest,
                         ::testing::ValuesIn(llama_quantized_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace kvforge
