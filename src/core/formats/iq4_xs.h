// IQ4_XS (GGUF type 23): 4-bit non-linear quantization in super-blocks of 256
// elements = 8 sub-blocks of 32, each with a signed 6-bit scale. Each
// element's 4 bits index the 16-entry codebook kIq4Codebook (iq4_codebook.h:
// int8 levels -127 .. 113, denser near zero).
//
// Block layout (136 bytes, no padding):
//   offset 0    uint16 d            super-scale, IEEE half
//   offset 2    uint16 scales_h     high 2 bits of the sub-block scales:
//               bits 2j, 2j+1 are bits 4, 5 of ls[j]
//   offset 4    uint8  scales_l[4]  low 4 bits of the sub-block scales:
//               ls[j] & 15 is the low nibble of scales_l[j/2] for even j,
//               the high nibble for odd j
//   offset 8    uint8  qs[128]      codebook indices, 16 bytes per sub-block:
//               element 32j + l is the LOW nibble of qs[16j + l] and element
//               32j + 16 + l the HIGH nibble, for l < 16
// so ls[j] = ((scales_l[j/2] >> 4(j%2)) & 15) | ((scales_h >> 2j) & 3) << 4
// is in [0, 63], and sub-block j's scale factor is ls[j] - 32, in [-32, 31].
//
// Dequantization of element l of sub-block j, k = its 4-bit index:
//   x = (d * float(ls[j] - 32)) * float(kIq4Codebook[k])
// evaluated exactly in this order in f32 (one product per sub-block, then one
// per element; both integer factors convert to f32 exactly).
//
// Why: a codebook matched to the bell shape of trained weights spends its 16
// levels where the weights are, and with a signed sub-block scale either tail
// can take the widest level (-127); at 4.25 bits per weight it is 0.25 bits
// cheaper than Q4_K, with no per-sub-block min.
//
// Quantization (quantize_row_iq4_xs) is our own weighted search (weights
// |x| + rms, as for Q4_K): per sub-block, steps that put its largest-magnitude
// value near either extreme level (-127 or 113) are tried, each index
// assignment refitted by weighted least squares for the scale and reassigned
// until it stops improving; then d maps the largest sub-block scale to -32
// (or up to 1.5 steps inside, whichever encodes the block best) and every
// sub-block tries both 6-bit neighbours of its ideal ls, indices recomputed
// against the stored d. Dequantization is bit-exact to the definition.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockIQ4_XS {
  static constexpr int kElems = 256;
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kElems / 64];
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS block must be 136 bytes as in GGUF");

// Sub-block j's (0..7) 6-bit scale ls[j], in [0, 63]; its factor is ls[j] - 32.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((b.scales_h >> (2 * j)) & 3) << 4;
}

// n: elements, a multiple of 256.
void dequantize_row_iq4_xs(const BlockIQ4_XS* src, float* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n);

}  // namespace kvforge
