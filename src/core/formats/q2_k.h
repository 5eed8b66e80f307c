// Q2_K (GGUF type 10): 2-bit asymmetric quantization in super-blocks of 256
// elements = 16 sub-blocks of 16, each with its own 4-bit scale and 4-bit min.
//
// Block layout (84 bytes, no padding; note the super-scales come LAST):
//   offset 0    uint8  scales[16]  sub-block j: scale sc[j] = scales[j] & 15 (low
//                                  nibble), min m[j] = scales[j] >> 4 (high nibble)
//   offset 16   uint8  qs[64]      2-bit quants, four per byte (below)
//   offset 80   uint16 d           super-scale of the sub-block scales, IEEE half
//   offset 82   uint16 dmin        super-scale of the sub-block mins, IEEE half
//
// The 256 elements form two halves of 128; half h uses qs[32h .. 32h+31]. The
// four 2-bit fields of one byte belong to four elements 32 apart:
//
//   byte qs[32h + l], l < 32:  bits 7-6   bits 5-4   bits 3-2   bits 1-0
//   element:                   128h+96+l  128h+64+l  128h+32+l  128h+l
//
// i.e. element e = 128h + 32k + l (k < 4, l < 32) is (qs[32h + l] >> 2k) & 3,
// and its sub-block is e / 16: bytes l < 16 feed even sub-blocks, l >= 16 odd
// ones. A quant q is in [0, 3].
//
// Dequantization of element e, j = e / 16:
//   x = (d * sc[j]) * q - (dmin * m[j])
// in f32, in exactly this order: the two products d * sc[j] and dmin * m[j]
// once per sub-block, then one multiply and one subtract per element, no
// fused multiply-add (llama.cpp's dequantize_row_q2_K). The products are
// exact in f32 (at most 11 + 4 + 2 significant bits), so only the subtraction
// rounds.
//
// Why: 2 bits per weight plus one byte of scale and min per 16 weights and two
// halves per 256 (2.625 bits per weight). The min lets each sub-block put its
// four levels on an asymmetric range; the bit-plane order lets SIMD code get
// 32 consecutive quants from one 32-byte load with a shift and a mask.
//
// Quantization (quantize_row_q2_k) is our own weighted search in the style of
// quantize_row_q4_k: per sub-block, candidate steps around (max - min)/3 are
// tried and each level assignment refitted by weighted least squares for
// (scale, min); the 16 scales and mins are put on 4-bit grids under f16
// super-scales, each sub-block keeping the best of the neighbouring grid
// points with its quants recomputed, and the two super-scales are refitted by
// least squares to the chosen grid points while that lowers the block's
// error. Quality, not bit-identity with other quantizers, is the goal;
// dequantization is bit-exact to the definition above.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ2_K {
  static constexpr int kElems = 256;
  uint8_t scales[kElems / 16];
  uint8_t qs[kElems / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block must be 84 bytes as in GGUF");

// n: elements, a multiple of 256.
void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, int64_t n);
void quantize_row_q2_k(const float* src, BlockQ2_K* dst, int64_t n);

}  // namespace kvforge
