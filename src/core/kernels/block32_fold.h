// How every SIMD level turns the exact integer dot products of one weight
// row's 32-element blocks with one token's Q8 activation blocks into f32, for
// the weight types llama.cpp pairs with q8_0 in the Q8-blocks form
// (matmul_task.h): Q5_0 and IQ4_NL. Per block b of the row:
//
//   isum_b = sum_i w_i * a_i        exact int32 (w: the block's integer levels,
//                                   a: the activation quants)
//   p_b    = (dw_b * da_b) * float(isum_b)    llama.cpp's per-block term: two
//                                   f32 products (dw: the block's f16 scale,
//                                   da: the activation block's f16-rounded scale)
//
// and the terms are summed in one fixed pattern of 16 lanes:
//
//   S_l = (((+0 + p_l) + p_{l+16}) + p_{l+32}) + ...    l = 0..15, f32 adds
//   T_j = S_j + S_{j+8} (j < 8),  U_j = T_j + T_{j+4} (j < 4),
//   V_j = U_j + U_{j+2} (j < 2),  y = V_0 + V_1.
//
// Lane l is lane l of one 512-bit f32 register at AVX-512 (the tree is
// avx512_hsum's), lane l mod 8 of register l / 8 of two at AVX2 (the tree is
// their sum, then avx2_hsum's), an array element in scalar code; a row whose
// blocks end mid-way through 16 leaves the remaining lanes as they are (the
// SIMD levels add +0 there, which changes no sum: no S_l is ever -0). With
// the integers exact and every f32 operation the same, each level gives the
// same bits. One serial sum over the blocks (llama.cpp's scalar order) would
// put a dependent f32 add per block on each row's critical path; 16 lanes
// take one vector add per 16 blocks.
//
// The empty asm statements pin a product to a register so that compilers
// targeting FMA cannot fuse it into the following add.
//
// `static`: each kernel file including this gets its own copy (see avx2_helpers.h).
#pragma once

#include <cstdint>

#include "core/formats/f16.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

inline constexpr int kBlock32FoldLanes = 16;

// p_b for one block.
static inline float block32_term(float dw, float da, int32_t isum) {
  float scale = dw * da;
  __asm__("" : "+x"(scale));
  float term = scale * float(isum);
  __asm__("" : "+x"(term));
  return term;
}

// y from the lane sums S.
static inline float block32_fold_lanes(const float (&s)[kBlock32FoldLanes]) {
  float t[8], u[4], v[2];
  for (int j = 0; j < 8; ++j) t[j] = s[j] + s[j + 8];
  for (int j = 0; j < 4; ++j) u[j] = t[j] + t[j + 4];
  for (int j = 0; j < 2; ++j) v[j] = u[j] + u[j + 2];
  return v[0] + v[1];
}

// The block's scale: Weights::scale(block) where the type defines one
// (MXFP4's E8M0 byte), else the f16 the block starts with.
template <class Weights>
static inline float block32_scale(const uint8_t* blk) {
  if constexpr (requires { Weights::scale(blk); })
    return Weights::scale(blk);
  else
    return fp16_to_fp32(uint16_t(blk[0] | blk[1] << 8));
}

// The portable kernel, for run_row_tiles (tile_loop.h). Weights: kBlockBytes,
// blocks starting with their f16 scale (or a scale(block) of their own), and
//   static void levels(const uint8_t* block, int8_t (&w)[32])
// giving the block's integer levels in element order.
template <class Weights>
struct Block32ScalarDot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / 32;
    float s[NT][kBlock32FoldLanes] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = w + b * Weights::kBlockBytes;
      const float dw = block32_scale<Weights>(blk);
      int8_t levels[32];
      Weights::levels(blk, levels);
      for (int k = 0; k < NT; ++k) {
        const int8_t* a = task.act_quants + (t0 + k) * task.cols + 32 * b;
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += levels[i] * a[i];
        float& lane = s[k][b % kBlock32FoldLanes];
        lane = lane + block32_term(dw, task.act_scales[(t0 + k) * n_blocks + b], isum);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = block32_fold_lanes(s[k]);
  }
};

}  // namespace kvforge
