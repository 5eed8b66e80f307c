// Q5_K (GGUF type 13): 5-bit asymmetric quantization in super-blocks of 256
// elements = 8 sub-blocks of 32, each with its own 6-bit scale and 6-bit min:
// Q4_K with one more bit per element.
//
// Block layout (176 bytes, no padding):
//   offset 0    uint16 d          super-scale for the sub-block scales, IEEE half
//   offset 2    uint16 dmin       super-scale for the sub-block mins, IEEE half
//   offset 4    uint8  scales[12] 8 scales sc[j] and 8 mins m[j], 6 bits each,
//               packed exactly as in Q4_K (q4_k.h; unpack with q4_k_scale_min):
//                 j < 4:  sc[j] = scales[j]   & 63     m[j] = scales[j+4] & 63
//                 j >= 4: sc[j] = (scales[j+4] & 15) | (scales[j-4] >> 6) << 4
//                         m[j]  = (scales[j+4] >> 4) | (scales[j]   >> 6) << 4
//   offset 16   uint8  qh[32]     high (5th) bits: bit b of qh[l] belongs to
//               element 32b + l, so qh[l] holds the high bits of the eight
//               elements l, l+32, ..., l+224 (one per sub-block)
//   offset 48   uint8  qs[128]    low 4 bits, as Q4_K's nibbles: 4 groups of
//               32 bytes; element 64g + l is the LOW nibble of qs[32g + l]
//               (sub-block 2g), element 64g + 32 + l the HIGH nibble
//               (sub-block 2g+1), for l < 32
// so element e = 64g + 32h + l (h = 0 low, 1 high nibble) has
//   q = ((qs[32g + l] >> 4h) & 15) | ((qh[l] >> (2g + h)) & 1) << 4   in [0, 31].
//
// Dequantization of element l of sub-block j:
//   x = (d * sc[j]) * q - (dmin * m[j])
// evaluated exactly in this order in f32 (two products per sub-block, then one
// multiply and one subtract per element, no fused multiply-add).
//
// Why: 32 levels halve Q4_K's step for 32 more bytes per 256 weights (5.5
// bits per weight); keeping the high bits in a plane of their own leaves the
// nibbles where Q4_K has them, so kernels share its unpacking.
//
// Quantization (quantize_row_q5_k) is Q4_K's weighted least-squares search
// (kquant_min_search.h) with levels up to 31. Quality, not bit-identity with
// other quantizers, is the goal; dequantization is bit-exact to the definition.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ5_K {
  static constexpr int kElems = 256;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];  // unpack with q4_k_scale_min (q4_k.h)
  uint8_t qh[kElems / 8];
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block must be 176 bytes as in GGUF");

// n: elements, a multiple of 256.
void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t n);
void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t n);

}  // namespace kvforge
