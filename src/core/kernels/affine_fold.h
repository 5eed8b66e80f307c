// How every SIMD level computes a dot product of a Q4_1 / Q5_1 weight row
// (per 32-block x = dw * q + mw, q unsigned: formats/q4_1.h, q5_1.h) with a
// token in the Q8-blocks activation form (matmul_task.h: quants q_a, scale
// da = f16(amax/127), block sum sa = f16(amax/127 * sum q_a)), so that the
// scalar, AVX2 and AVX-512 kernels give the same bits:
//
//   per block b:  isum_b = sum_i q[i] * q_a[i]          exact int32 (<= 32*31*127)
//                 t_b = ((dw_b * da_b) * float(isum_b)) + (mw_b * sa_b)
//                       each product and the sum rounded to f32, never fused
//                 lane[b % 16] += t_b                   b = 0, 1, 2, ... in order
//   result = ((h[0] + h[2]) + (h[1] + h[3])),   h[i] = g[i] + g[i + 4],
//                                               g[i] = lane[i] + lane[i + 8]
//
// t_b is llama.cpp's per-block term for q4_1 / q5_1 x q8_1
// (`(d_x*d_y)*sumi + m_x*s_y` in its generic vec_dot): of the block's
// sum (dw q + mw) * (da q_a) = dw da isum + mw da sum(q_a), the second part
// is taken as mw * sa, sa being the activation block's sum as the f16 that
// block_q8_1 stores. What differs is how the terms are summed: in 16
// interleaved partial sums, so one AVX-512 register (two AVX2 registers)
// holds 16 blocks' terms and takes one add per 16 blocks, instead of a
// dependent scalar chain with one term extracted from a vector per block.
// The final reduction is the order of avx512_hsum / avx2_hsum.
//
// The SIMD kernels pad a row's last, partial group of 16 blocks with zero
// blocks, whose terms are +0 (or masked out). Adding +0 leaves every lane
// unchanged: lanes start at +0 and an f32 sum is -0 only when both addends
// are, so no lane is ever -0.
//
// The empty asm statements pin each product to a register so that a
// compiler targeting FMA (the *_avx*.cpp files, GCC's default
// -ffp-contract=fast) cannot fuse it with the add. `static`: every including
// file (of any ISA) gets its own copy.
#pragma once

#include <cstdint>

namespace kvforge {

inline constexpr int kAffineFoldLanes = 16;

static inline float affine_block_term(float dw, float mw, float da, float sa, int32_t isum) {
  float scaled = (dw * da) * float(isum);
  __asm__("" : "+x"(scaled));
  float offset = mw * sa;
  __asm__("" : "+x"(offset));
  return scaled + offset;
}

static inline float affine_fold_lanes(const float (&lane)[kAffineFoldLanes]) {
  float g[8], h[4];
  for (int i = 0; i < 8; ++i) g[i] = lane[i] + lane[i + 8];
  for (int i = 0; i < 4; ++i) h[i] = g[i] + g[i + 4];
  return (h[0] + h[2]) + (h[1] + h[3]);
}

}  // namespace kvforge
