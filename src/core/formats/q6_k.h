// Q6_K (GGUF type 14): 6-bit symmetric quantization in super-blocks of 256
// elements = 16 sub-blocks of 16, each with a signed 8-bit scale.
//
// Block layout (210 bytes, no padding; note d comes LAST):
//   offset 0    uint8 ql[128]    low 4 bits of each quant
//   offset 128  uint8 qh[64]     high 2 bits of each quant
//   offset 192  int8  scales[16] sub-block scales; element e uses scales[e / 16]
//   offset 208  uint16 d         super-scale, IEEE half
// The 256 elements form two halves of 128; half h uses ql[64h .. 64h+63] and
// qh[32h .. 32h+31]. Within a half, for l < 32, with L = ql + 64h, H = qh + 32h:
//   element l       = (L[l]      & 15) | ((H[l] >> 0) & 3) << 4
//   element l + 32  = (L[l + 32] & 15) | ((H[l] >> 2) & 3) << 4
//   element l + 64  = (L[l]      >> 4) | ((H[l] >> 4) & 3) << 4
//   element l + 96  = (L[l + 32] >> 4) | ((H[l] >> 6) & 3) << 4
// so one qh byte carries the high bits of four elements 32 apart, and one ql
// byte the low bits of two elements 64 apart. A quant q is in [0, 63].
//
// Dequantization of element e (within the half's index space above):
//   x = (d * scales[e/16]) * (q - 32)
// evaluated left to right in f32 (two multiplies, no fused multiply-add).
//
// Why: 6 bits per weight plus 8-bit scales per 16 (6.5625 bits per weight) is
// near-lossless; the 32-element stride between the bit-planes lets SIMD code
// rebuild 32 consecutive quants with shifts and masks of 32-byte vectors.
//
// Quantization (quantize_row_q6_k) is our own, in the style of the published
// make_qx quantizer: per sub-block, candidate steps around max/-32 (mapping
// the largest-magnitude value onto the extra level -32) are tried, each refit
// by least squares, the lowest squared error kept; the 16 scales are then
// quantized to int8 under d = max_scale / -128 and the quants recomputed
// against the stored scales. Dequantization is bit-exact to the definition.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ6_K {
  static constexpr int kElems = 256;
  uint8_t ql[kElems / 2];
  uint8_t qh[kElems / 4];
  int8_t scales[kElems / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block must be 210 bytes as in GGUF");

// n: elements, a multiple of 256.
void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t n);
void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t n);

}  // namespace kvforge
