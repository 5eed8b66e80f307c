// Q3_K (GGUF type 11): 3-bit symmetric quantization in super-blocks of 256
// elements = 16 sub-blocks of 16, each with its own 6-bit scale.
//
// Block layout (110 bytes, no padding; note d comes LAST):
//   offset 0    uint8  hmask[32]   high bit of each quant (below)
//   offset 32   uint8  qs[64]      low 2 bits of each quant, four per byte (below)
//   offset 96   uint8  scales[12]  16 six-bit scales sc[j], stored + 32 (below)
//   offset 108  uint16 d           super-scale, IEEE half
//
// Low bits: as in Q2_K. The 256 elements form two halves of 128; element
// e = 128h + 32k + l (k < 4, l < 32) has its low two bits at
// (qs[32h + l] >> 2k) & 3:
//
//   byte qs[32h + l]:  bits 7-6   bits 5-4   bits 3-2   bits 1-0
//   element:           128h+96+l  128h+64+l  128h+32+l  128h+l
//
// High bit: element e = 32i + l (i < 8, l < 32) has it at bit i of hmask[l],
// so hmask[l] holds the high bits of the eight elements l, l+32, ..., l+224.
// The quant is q = low - (high bit clear ? 4 : 0), in [-4, 3]: the stored
// 3-bit value low | high << 2 minus 4.
//
// Scales: sub-block j (elements 16j .. 16j+15) has the 6-bit value
//   sc[j] = low4 | high2 << 4, with
//   low4  = scales[j] & 15         for j < 8,   scales[j - 8] >> 4  for j >= 8
//   high2 = (scales[8 + j % 4] >> 2 * (j / 4)) & 3
// so bytes 0-7 carry the low nibbles (j and j + 8 share byte j % 8) and bytes
// 8-11 the top two bits, four per byte. The scale is sc[j] - 32, in [-32, 31].
//
// Dequantization of element e, j = e / 16:
//   x = (d * (sc[j] - 32)) * q
// in f32, in exactly this order (llama.cpp's dequantize_row_q3_K): one product
// per sub-block, one per element, no fused multiply-add. Both products are
// exact in f32 (at most 11 + 5 + 2 significant bits).
//
// Why: 3 bits per weight plus 6-bit scales per 16 and one half per 256
// (3.4375 bits per weight). The signed scale and the asymmetric level range
// let the extra level -4 land on whichever side holds the largest magnitude.
//
// Quantization (quantize_row_q3_k) is our own weighted search in the style of
// quantize_row_q6_k: per sub-block, candidate steps that put the
// largest-magnitude value on level -4 or +3 are tried, each assignment refit
// by weighted least squares and re-rounded until it settles, the lowest error
// kept; the 16 scales are put on the 6-bit grid under d = max_scale / -32,
// each sub-block keeping the best neighbouring grid point with its quants
// recomputed, and d is refitted by least squares while that lowers the
// block's error. Dequantization is bit-exact to the definition above.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ3_K {
  static constexpr int kElems = 256;
  uint8_t hmask[kElems / 8];
  uint8_t qs[kElems / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block must be 110 bytes as in GGUF");

// Sub-block j's (0..15) stored 6-bit scale sc[j] (the scale is sc[j] - 32).
inline int q3_k_scale(const uint8_t* scales, int j) {
  const int low4 = j < 8 ? scales[j] & 15 : scales[j - 8] >> 4;
  const int high2 = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low4 | high2 << 4;
}

// n: elements, a multiple of 256.
void dequantize_row_q3_k(const BlockQ3_K* src, float* dst, int64_t n);
void quantize_row_q3_k(const float* src, BlockQ3_K* dst, int64_t n);

}  // namespace kvforge
