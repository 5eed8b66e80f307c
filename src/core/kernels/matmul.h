// Weight-times-activation products, the bulk of the model's arithmetic.
//
//   y[t][r] = sum_c W[r][c] * x[t][c]
//   W: [rows][cols] in its storage format (cols contiguous, as in GGUF: ne0 = cols)
//   x: [n_tokens][cols] f32, y: [n_tokens][rows] f32
//
// n_tokens = 1 is decode (matrix-vector, bandwidth-bound); larger n_tokens is
// prefill or batched decode (matrix-matrix): each weight row is read from
// memory once per call and reused for every token while in cache.
// Work is split over output rows across the pool's threads. Activations are
// converted once per call into the format the weight type's dot product wants
// (e.g. Q8_0 blocks for Q8_0/Q4_0 weights), into `scratch`, which only grows.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/threadpool.h"

namespace kvforge {

struct WeightView {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features (contiguous)
};

// Reusable buffer for converted activations; grows to the largest call and stays.
struct MatmulScratch {
  std::vector<uint8_t> activations;
  void reserve(size_t bytes) {
    if (activations.size() < bytes) activations.resize(bytes);
  }
};

// Bytes of scratch a call with this weight and n_tokens needs (for reserving up front).
size_t matmul_scratch_bytes(const WeightView& w, int64_t n_tokens);

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch& scratch);

// Scalar reference: dequantizes each weight row to f32 and accumulates in
// double. Slow; the oracle for kernel tests.
void matmul_reference(const WeightView& w, const float* x, int64_t n_tokens, float* y);

}  // namespace kvforge
