// Q8_K (GGUF type 15): 8-bit activations for dot products with K-quant
// weights (Q2_K, Q3_K, Q4_K, Q6_K). Never stored in model files; produced per call.
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
// Quantization, as llama.cpp's quantize_row_q8_K_ref (which its x86 build
// also runs): max is the first element of largest |x| in the block, with its
// sign; iscale = -127 / max, q = nearest-even(iscale * x) (|q| <= 127, and
// the element max itself maps to -127), d = 1 / iscale (so d < 0 when max > 0).
// A block with |max| below 1e-30 (zero, or where 127/max would overflow)
// gets d = 0, q = 0, sums 0 (llama.cpp only zeroes max == 0).
// Error per element <= |d|/2 (plus f32 rounding of iscale * x). The SIMD
// activation quantizers in kernels/ reproduce this one bit for bit.
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
