// Checks a quantized file's logits against llama.cpp's where the two engines
// may quantize an activation differently (a q8_0 rounding crossing), as
// hybrid_quantized_golden_test.cpp explains: after the first crossing the two
// runs are equally valid quantizations of one f32 computation, so each is
// held to its distance from that computation (the same weights dequantized
// to f32, run by kvforge), not to the other.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "golden_logits.h"
#include "model/model.h"

namespace kvforge::testing {

// `file` with every quantized tensor dequantized to f32: the same weight
// values, multiplied by f32 activations.
inline gguf::GgufFile dequantized(const gguf::GgufFile& file) {
  gguf::GgufWriter out(3, file.alignment());
  for (const gguf::KeyValue& kv : file.metadata()) out.set(kv.key, kv.value);
  for (const gguf::TensorInfo& t : file.tensors()) {
    const auto data = file.tensor_data(t);
    const int64_t cols = int64_t(t.dims[0]), rows = int64_t(t.n_elements) / cols;
    std::vector<uint8_t> bytes(size_t(t.n_elements) * sizeof(float));
    float* f = reinterpret_cast<float*>(bytes.data());
    const size_t rb = row_bytes(t.type, size_t(cols));
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, data.data() + size_t(r) * rb, f + r * cols, cols);
    out.add_tensor(t.name, GgmlType::F32, t.dims, std::move(bytes));
  }
  return gguf::GgufFile::from_bytes(out.to_bytes(), "dequantized.gguf");
}

inline float max_diff(std::span<const float> a, std::span<const float> b, size_t from = 0) {
  float d = 0;
  for (size_t i = from; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

inline float top2_margin(std::span<const float> row) {
  std::vector<float> v(row.begin(), row.end());
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return v[0] - v[1];
}

struct NoiseBounds {
  int first_crossing_row;  // rows before it agree within `exact_bound` (rows() when none)
  float exact_bound;       // the f32 goldens' bound for this architecture
  float noise_ratio;       // how far apart the two engines' quantization noise may be
};

// ours: kvforge's logits for the golden's tokens; exact: the same from the
// dequantized file. Expects: rows before the first crossing within
// exact_bound; after it, |ours - llama.cpp| <= B = |ours - exact| (neither
// engine's quantization moves it further than kvforge's own does), the two
// distances from `exact` within noise_ratio of each other, and every top
// token llama.cpp picks by a margin over twice the row's bound equal.
inline void expect_within_quantization_noise(const std::string& name, const GoldenLogits& g,
                                             std::span<const float> ours,
                                             std::span<const float> exact, NoiseBounds b) {
  const size_t split = size_t(b.first_crossing_row) * size_t(g.n_vocab);
  const std::span<const float> llama(g.logits);
  const float before = max_diff(ours.first(split), llama.first(split));
  EXPECT_LE(before, b.exact_bound) << "rows before the first q8_0 rounding crossing";
  const float worst = max_diff(ours, llama, split);
  const float bound = max_diff(ours, exact, split);
  const float llama_noise = max_diff(llama, exact, split);
  EXPECT_LE(worst, bound);
  EXPECT_LE(llama_noise, b.noise_ratio * bound + b.exact_bound);
  EXPECT_LE(bound, b.noise_ratio * llama_noise + b.exact_bound);
  int first_over = g.rows();  // printed: where a regenerated golden's crossing is
  for (int i = g.rows() - 1; i >= 0; --i) {
    const size_t at = size_t(i) * size_t(g.n_vocab);
    if (max_diff(ours.subspan(at, size_t(g.n_vocab)), g.row(i)) > b.exact_bound) first_over = i;
  }
  int picks = 0;
  for (int i = 0; i < g.rows(); ++i) {
    const float row_bound = i < b.first_crossing_row ? b.exact_bound : bound;
    if (top2_margin(g.row(i)) <= 2 * row_bound) continue;
    const auto row = ours.subspan(size_t(i) * size_t(g.n_vocab), size_t(g.n_vocab));
    const auto want = g.row(i);
    EXPECT_EQ(std::max_element(row.begin(), row.end()) - row.begin(),
              std::max_element(want.begin(), want.end()) - want.begin())
        << "top token of row " << i;
    ++picks;
  }
  std::printf(
      "%-18s before row %d (first row over the bound: %d): %.1e; after: |ours - llama.cpp| "
      "%.2e, from f32 activations: ours %.2e, llama.cpp %.2e; %d top tokens compared\n",
      name.c_str(), b.first_crossing_row, first_over, double(before), double(worst), double(bound),
      double(llama_noise), picks);
}

// The whole check for dir/name.gguf and its .logits.bin, on 2 threads.
inline void expect_quantized_golden_within_noise(const std::filesystem::path& dir,
                                                 const std::string& name, NoiseBounds b) {
  const GoldenLogits g = read_golden_logits(dir / (name + ".logits.bin"));
  const auto path = dir / (name + ".gguf");
  const auto model = Model::load(path);
  ASSERT_EQ(model->config().n_vocab, g.n_vocab);
  const std::vector<float> ours = run_golden_tokens(*model, g, 2);
  const auto f32_model = Model::from_file(dequantized(gguf::GgufFile::open(path)));
  const std::vector<float> exact = run_golden_tokens(*f32_model, g, 2);
  expect_within_quantization_noise(name, g, ours, exact, b);
}

}  // namespace kvforge::testing
