// Q8_K (GGUF type 15): 8-bit activations for dot products with K-quant
// weights (Q4_K, Q6_K). Never stored in model files; produced per call.
//
// Block layout (292 bytes, no padding):
//   offset 0    float d          scale (f32, not half: activations need range)
//   offset 4    int8  qs[256]    quants, element i is qs[i]
//   offset 260  int16 bsums[16]  bsums[k] = sum of qs[16k .. 16k+15]
// Value: x[i] ~= qs[i] * d.
//
// Why the sums: K-quant weights are q*scale - min (Q4_K) or (q - 32)*scale
// (Q6_K); the min / offset term of a sub-block dot product is a constant times
// the sum of the activations of that sub-block, so precomputing the sums of
// each 16 quants turns it into a few integer multiplies per super-block.
//
// Quantization: amax is the largest |x| of the block; iscale = 127 / amax,
// q = nearest-even(iscale * x), d = 1 / iscale. |q| <= 127 (never -128, so
// sign tricks in SIMD code cannot overflow). A block with amax below 1e-30
// (zero, or where 127/amax would overflow) gets d = 0, q = 0, sums 0.
// Error per element <= d/2 (plus f32 rounding of iscale * x).
// This differs from ggml's reference (which divides by the signed max and
// maps it to -127): Q8_K never leaves the process, and the amax form is what
// a vector max-reduction computes, so the SIMD activation quantizers in
// kernels/ reproduce this scalar one bit for bit.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ8_K {
  static constexpr int kElems = 256;
  float d;
  int8_t qs[kElems];
  int16_t bsums[kElems / 16];
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block must be 292 bytes as in ggml");

// n: elements, a multiple of 256.
void quantize_row_q8_k(const float* src, BlockQ8_K* dst, int64_t n);
void dequantize_row_q8_k(const BlockQ8_K* src, float* dst, int64_t n);

}  // namespace kvforge
