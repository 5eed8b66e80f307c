// Q4_1 / Q5_1 weights x Q8-blocks activations, AVX2; for dot_q4_1_avx2.cpp
// and dot_q5_1_avx2.cpp only.
//
// Eight blocks per step, one 8-lane register of block terms: per block one
// vpmaddubsw of the unsigned levels (<= 31) with the signed activation quants
// (16-bit pair sums <= 2*31*127); pairs of blocks are then summed by
// vphaddw (<= 4*31*127, still within int16) and vpmaddwd, and two vphaddd
// and a cross-lane add leave the 8 blocks' exact sums in block order. The
// terms are then folded as affine_fold.h defines (lanes 0-7 of the fold are
// the first register, 8-15 the second), so results match the scalar kernel
// bit for bit.
//
// Blocks provides kBlockBytes (the d, m halves at its start, as the two
// formats have them) and
//   static __m256i levels(const uint8_t* block)
// giving its 32 levels as unsigned bytes in element order.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/kernels/affine_fold.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Pins a vector product to a register (see affine_fold.h).
static inline __m256 avx2_unfused(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

template <class Blocks>
struct AffineAvx2Dot {
  static constexpr int64_t kBlockBytes = Blocks::kBlockBytes;
  const MatmulTask& task;

  // Steps and offsets of the n <= 8 blocks from `first` on as f32 lanes,
  // zero past n, from their (d | m << 16) words: eight scalar loads, not a
  // gather: gathers are slow on Zen 4 and slower still on Intel cores with
  // the Gather Data Sampling mitigation.
  static void steps_and_offsets(const uint8_t* first, int n, __m256& dw, __m256& mw) {
    int32_t words[8] = {};
    for (int j = 0; j < 8; ++j)
      if (j < n) std::memcpy(&words[j], first + j * kBlockBytes, sizeof(int32_t));
    const __m256i dm = _mm256_setr_epi32(words[0], words[1], words[2], words[3], words[4], words[5],
                                         words[6], words[7]);
    // Per 128-bit lane: 4 steps, then 4 offsets; the permute gathers 8 of each.
    const __m256i halves = _mm256_packus_epi32(_mm256_and_si256(dm, _mm256_set1_epi32(0xffff)),
                                               _mm256_srli_epi32(dm, 16));
    const __m256i ordered = _mm256_permute4x64_epi64(halves, _MM_SHUFFLE(3, 1, 2, 0));
    dw = _mm256_cvtph_ps(_mm256_castsi256_si128(ordered));
    mw = _mm256_cvtph_ps(_mm256_extracti128_si256(ordered, 1));
  }

  // Exact dot products of 8 blocks' levels with the activation quants of
  // block j at a[j], as int32 lanes in block order.
  static __m256i block_sums(const __m256i (&levels)[8], const int8_t* const (&a)[8]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i pairs[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i p0 = _mm256_maddubs_epi16(
          levels[2 * j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[2 * j])));
      const __m256i p1 = _mm256_maddubs_epi16(
          levels[2 * j + 1], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[2 * j + 1])));
      // Per 128-bit lane: 2 partial sums of block 2j, then 2 of block 2j+1.
      pairs[j] = _mm256_madd_epi16(_mm256_hadd_epi16(p0, p1), ones);
    }
    // Per 128-bit lane: blocks 0-3 (4-7), elements 0-15 in the low lane and 16-31 in the high.
    const __m256i lo = _mm256_hadd_epi32(pairs[0], pairs[1]);
    const __m256i hi = _mm256_hadd_epi32(pairs[2], pairs[3]);
    return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                            _mm256_permute2x128_si256(lo, hi, 0x31));
  }

  // The terms of blocks [b0, b0 + n), n <= 8, for tokens t0..t0+NT-1 (zero
  // lanes past n).
  template <int NT>
  void terms(const uint8_t* w, int64_t t0, int64_t b0, int n, __m256 (&term)[NT]) const {
    const int64_t n_blocks = task.cols / 32;
    __m256 dw, mw;
    steps_and_offsets(w + b0 * kBlockBytes, n, dw, mw);
    __m256i levels[8];
    for (int j = 0; j < 8; ++j)
      levels[j] = j < n ? Blocks::levels(w + (b0 + j) * kBlockBytes) : _mm256_setzero_si256();
    const __m256i valid =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int k = 0; k < NT; ++k) {
      const int64_t s = (t0 + k) * n_blocks + b0;
      // Blocks past n (the row's end) have zero levels: their products are 0
      // whatever quants they meet, so they read block 0's.
      const int8_t* first = task.act_quants + (t0 + k) * task.cols + 32 * b0;
      const int8_t* a[8];
      for (int j = 0; j < 8; ++j) a[j] = j < n ? first + 32 * j : first;
      const __m256 da = _mm256_maskload_ps(task.act_scales + s, valid);
      const __m256 sa = _mm256_maskload_ps(task.act_block_sums + s, valid);
      const __m256 isum = _mm256_cvtepi32_ps(block_sums(levels, a));
      const __m256 scaled = avx2_unfused(_mm256_mul_ps(_mm256_mul_ps(dw, da), isum));
      const __m256 offset = avx2_unfused(_mm256_mul_ps(mw, sa));
      term[k] = _mm256_add_ps(scaled, offset);
    }
  }

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / 32;
    __m256 lo[NT], hi[NT], term[NT];  // fold lanes 0-7 and 8-15
    for (int k = 0; k < NT; ++k) lo[k] = hi[k] = _mm256_setzero_ps();
    for (int64_t b0 = 0; b0 < n_blocks; b0 += 16) {
      const int64_t left = n_blocks - b0;
      terms(w, t0, b0, left < 8 ? int(left) : 8, term);
      for (int k = 0; k < NT; ++k) lo[k] = _mm256_add_ps(lo[k], term[k]);
      if (left <= 8) break;
      terms(w, t0, b0 + 8, left < 16 ? int(left - 8) : 8, term);
      for (int k = 0; k < NT; ++k) hi[k] = _mm256_add_ps(hi[k], term[k]);
    }
    for (int k = 0; k < NT; ++k) out[k] = avx2_hsum(_mm256_add_ps(lo[k], hi[k]));
  }
};

}  // namespace
}  // namespace kvforge
