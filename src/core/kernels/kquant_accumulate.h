// How every SIMD level folds one super-block's exact integer dot products
// into a row's f32 sum for K-quant weights (Q2_K, Q4_K, Q5_K, Q6_K):
//   acc = (acc + (d * da) * isum) - (dmin * da) * msum
// and for those with a single super-scale and no min term (Q3_K, IQ4_XS):
//   acc = acc + (d * da) * isum
// rounded step by step in f32. The integer parts are exact at every level, so
// with this one rounding sequence the results are bit-identical across
// scalar/AVX2/AVX-512. The empty asm statements pin each product to an f32
// register so that a compiler targeting FMA (the *_avx*.cpp files) cannot
// fuse it with the following add or subtract.
//
// `static`: each file including this gets its own copy, so an AVX-512
// compiled copy can never be linked into code that runs on older CPUs.
#pragma once

#include <cstdint>

namespace kvforge {

// d, dmin: the weight block's super-scales; da: the Q8_K activation scale.
static inline float kquant_accumulate(float acc, float d, float dmin, float da, int32_t isum,
                                      int32_t msum) {
  float scaled = (d * da) * float(isum);
  __asm__("" : "+x"(scaled));
  float offset = (dmin * da) * float(msum);
  __asm__("" : "+x"(offset));
  return (acc + scaled) - offset;
}

// The one-product fold for weights whose super-block has a single scale d.
static inline float kquant_accumulate_scaled(float acc, float d, float da, int32_t isum) {
  float scaled = (d * da) * float(isum);
  __asm__("" : "+x"(scaled));
  return acc + scaled;
}

// The same folds for `count` super-blocks whose products were formed ahead
// of time, several at once in a vector (kquant_groups_avx2.h / _avx512.h),
// each rounded to f32 exactly as above: terms[2i] = (d * da) * isum and
// terms[2i+1] = (dmin * da) * msum of the i-th, in order.
static inline float kquant_accumulate_terms(float acc, const float* terms, int count) {
  for (int i = 0; i < count; ++i) acc = (acc + terms[2 * i]) - terms[2 * i + 1];
  return acc;
}

// The same for kquant_accumulate_scaled: terms[2i] = (d * da) * isum.
static inline float kquant_accumulate_scaled_terms(float acc, const float* terms, int count) {
  for (int i = 0; i < count; ++i) acc = acc + terms[2 * i];
  return acc;
}

}  // namespace kvforge
