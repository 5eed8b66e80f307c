// Activation quantizers, portable scalar code (the definitions the AVX2 and
// AVX-512 versions reproduce bit for bit; see matmul_task.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/f16.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {

void quantize_activations_q8_scalar(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                    int8_t* quants, float* scales,
                                    int32_t* /*sums: AVX-512 only*/) {
  constexpr int kBlock = 32;
  const int64_t n_blocks = cols / kBlock;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* xs = x + t * cols + b * kBlock;
      int8_t* q = quants + t * cols + b * kBlock;
      float amax = 0.0f;
      for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xs[i]));
      if (amax < 1e-30f) {
        std::memset(q, 0, kBlock);
        scales[t * n_blocks + b] = 0.0f;
        continue;
      }
      const float id = 127.0f / amax;
      scales[t * n_blocks + b] = fp16_to_fp32(fp32_to_fp16(amax / 127.0f));
      for (int i = 0; i < kBlock; ++i) {
        q[i] = int8_t(std::clamp(long(std::lrintf(xs[i] * id)), -127l, 127l));
      }
    }
  }
}

void quantize_activations_q8_blocks_scalar(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                           int8_t* quants, float* scales, float* block_sums) {
  constexpr int kBlock = 32;
  const int64_t n_blocks = cols / kBlock;
  quantize_activations_q8_scalar(x, cols, t0, t1, quants, scales, nullptr);
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* xs = x + t * cols + b * kBlock;
      const int8_t* q = quants + t * cols + b * kBlock;
      float amax = 0.0f;
      for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xs[i]));
      int32_t sum = 0;
      for (int i = 0; i < kBlock; ++i) sum += q[i];
      // q8_1's s: the unrounded d times the quants' sum, then rounded to f16.
      const float d = amax < 1e-30f ? 0.0f : amax / 127.0f;
      block_sums[t * n_blocks + b] = fp16_to_fp32(fp32_to_fp16(d * float(sum)));
    }
  }
}

void quantize_activations_q8_k_scalar(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                      BlockQ8_K* blocks) {
  const int64_t n_blocks = cols / BlockQ8_K::kElems;
  for (int64_t t = t0; t < t1; ++t) quantize_row_q8_k(x + t * cols, blocks + t * n_blocks, cols);
}

}  // namespace kvforge
