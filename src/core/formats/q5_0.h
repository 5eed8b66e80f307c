// Q5_0 (GGUF type 6): 5-bit symmetric quantization in blocks of 32.
//
// Block layout (22 bytes, no padding):
//   offset 0   uint16 d       scale, IEEE half (f16.h)
//   offset 2   uint8  qh[4]   the 5th (value 16) bit of every element, as one
//                             little-endian uint32 h: bit j of h belongs to
//                             element j, j = 0..31
//   offset 6   uint8  qs[16]  the low 4 bits, packed nibbles:
//                             element j      (j < 16) = low nibble  of qs[j]
//                             element j + 16 (j < 16) = high nibble of qs[j]
//
//   byte:  0    1  | 2      3       4       5      | 6     7    ...   21
//          d (f16) | h 0-7  h 8-15  h 16-23 h 24-31 | qs[0] qs[1] ... qs[15]
//   qs[j] = (q[j + 16] & 15) << 4 | (q[j] & 15);   h bit j = q[j] >> 4
//
// Element j's quant q = nibble | (h bit j) << 4 is in [0, 31] and stands for
// the integer w = q - 16 in [-16, 15].
// Dequantization (the published reference's f32 operations, in its order):
//   x = float(q - 16) * d     (int -> float, exact; then one f32 multiply)
// The nibble split is Q4_0's, so SIMD code unpacks 32 elements with one AND
// and one shift; h, being in element order, is a byte mask of the block as it is.
//
// Quantization (ours, not the published one): the published quantizer sets
// d = max / -16 (max: the largest-magnitude element with its sign, which so
// lands on the extra level -16) and rounds every x/d half up. Ours tries that
// scale and a few around it on both sides of zero (max on -16, -15.5, ..., or
// on +15, +14.5, ...), each followed by one least-squares refit of d to the
// levels it chose, and keeps the scale whose block, as stored (d rounded to a
// half, every element on its nearest level w = clamp(round(x/d), -16, 15)),
// has the smallest squared error. As the published scale is a candidate and
// nearest rounding under the stored d is per-element optimal, no block comes
// out worse than the published quantizer would make it. A zero block gets
// d = 0 and q = 16; a scale beyond the half range is clamped to +-65504.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ5_0 {
  static constexpr int kElems = 32;
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must be 22 bytes as in GGUF");

// n: elements, a multiple of 32.
void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, int64_t n);
void quantize_row_q5_0(const float* src, BlockQ5_0* dst, int64_t n);

}  // namespace kvforge
