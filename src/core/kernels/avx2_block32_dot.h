// The AVX2 kernel for Q8-blocks weights paired with q8_0 (Q5_0, IQ4_NL), for
// the dot_<type>_avx2.cpp files only. Per 8 blocks of a row the weights'
// integer levels are unpacked once for all the tile's tokens; per token each
// block's exact integer dot product (sign trick, vpmaddubsw, vpmaddwd: 8
// int32 partial sums) is reduced across the 8 blocks to one int32 lane per
// block, then scaled and added into the two 8-lane f32 accumulators exactly
// as block32_fold.h defines, so the results are the scalar kernel's bits.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/kernels/avx2_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Lane i: the sum of v[i]'s 8 lanes (exact int32).
inline __m256i avx2_block_sums8(const __m256i (&v)[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]);
  const __m256i h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]);
  const __m256i h67 = _mm256_hadd_epi32(v[6], v[7]);
  // Per 128-bit half: the half's partial sums of blocks 0-3 (4-7).
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// acc + (dw * da) * float(isum), lane by lane, unfused (block32_fold.h).
inline __m256 avx2_block32_fold(__m256 acc, __m256 dw, __m256 da, __m256i isum) {
  __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum));
  __asm__("" : "+x"(term));
  return _mm256_add_ps(acc, term);
}

// A block's 16 bytes of packed nibbles at qs (element j in the low nibble of
// byte j, element j + 16 in the high one) as 32 bytes in element order: the
// bytes in both 128-bit halves, the upper half's dwords shifted right by 4.
inline __m256i avx2_nibbles_in_order(const uint8_t* qs) {
  const __m256i both =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                          _mm256_set1_epi8(0x0f));
}

// The f16 scales at the start of 8 blocks `stride` bytes apart, as f32.
inline __m256 avx2_block_scales8(const uint8_t* blk, int64_t stride) {
  uint64_t lo = 0, hi = 0;
  for (int i = 0; i < 4; ++i) {
    uint16_t a, b;
    std::memcpy(&a, blk + i * stride, 2);
    std::memcpy(&b, blk + (4 + i) * stride, 2);
    lo |= uint64_t(a) << (16 * i);
    hi |= uint64_t(b) << (16 * i);
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(int64_t(hi), int64_t(lo)));
}

// Tokens per tile (run_row_tiles): a chunk's unpacked levels serve up to 8.
inline constexpr int kBlock32Avx2TokenTile = 8;

// Weights: kBlockBytes, blocks starting with their f16 scale (or a
//   static float scale(const uint8_t* block) of their own), and
//   static __m256i levels(const uint8_t* block)
// giving the block's 32 integer levels as signed bytes in element order.
template <class Weights>
struct Block32Avx2Dot {
  const MatmulTask& task;

  static constexpr int64_t kChunkBlocks = 8;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / 32;
    const int8_t* a[NT];
    const float* da[NT];
    __m256 acc[NT][2];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_quants + (t0 + k) * task.cols;
      da[k] = task.act_scales + (t0 + k) * n_blocks;
      acc[k][0] = acc[k][1] = _mm256_setzero_ps();
    }
    int64_t b0 = 0;
    for (; b0 + kChunkBlocks <= n_blocks; b0 += kChunkBlocks) {
      const int8_t* ac[NT];
      const float* dac[NT];
      for (int k = 0; k < NT; ++k) ac[k] = a[k] + 32 * b0, dac[k] = da[k] + b0;
      chunk<NT>(w + b0 * Weights::kBlockBytes, ac, dac, int(b0 / kChunkBlocks) % 2, acc);
    }
    if (b0 < n_blocks) {
      // The row's last blocks, zero-padded to a chunk: the padding's activations
      // and scales are 0, so it adds (0 * 0) * 0 = +0.
      const int64_t nb = n_blocks - b0;
      alignas(32) uint8_t wpad[kChunkBlocks * Weights::kBlockBytes] = {};
      alignas(32) int8_t apad[NT][32 * kChunkBlocks] = {};
      alignas(32) float dpad[NT][kChunkBlocks] = {};
      const int8_t* ac[NT];
      const float* dac[NT];
      std::memcpy(wpad, w + b0 * Weights::kBlockBytes, size_t(nb * Weights::kBlockBytes));
      for (int k = 0; k < NT; ++k) {
        std::memcpy(apad[k], a[k] + 32 * b0, size_t(32 * nb));
        std::memcpy(dpad[k], da[k] + b0, size_t(nb) * sizeof(float));
        ac[k] = apad[k];
        dac[k] = dpad[k];
      }
      chunk<NT>(wpad, ac, dac, int(b0 / kChunkBlocks) % 2, acc);
    }
    for (int k = 0; k < NT; ++k) out[k] = avx2_hsum(_mm256_add_ps(acc[k][0], acc[k][1]));
  }

  // 8 blocks at w (b0 of them into the row, b0 a multiple of 8) against each
  // token's quants a[k] and scales da[k] of those blocks, into lanes
  // b0 mod 16 .. b0 mod 16 + 7: accumulator half (b0 / 8) % 2.
  template <int NT>
  static void chunk(const uint8_t* w, const int8_t* const (&a)[NT], const float* const (&da)[NT],
                    int half, __m256 (&acc)[NT][2]) {
    __m256i levels[kChunkBlocks];
    for (int i = 0; i < kChunkBlocks; ++i)
      levels[i] = Weights::levels(w + i * Weights::kBlockBytes);
    __m256 dw;
    if constexpr (requires { Weights::scale(w); }) {
      alignas(32) float s[kChunkBlocks];
      for (int i = 0; i < kChunkBlocks; ++i) s[i] = Weights::scale(w + i * Weights::kBlockBytes);
      dw = _mm256_load_ps(s);
    } else {
      dw = avx2_block_scales8(w, Weights::kBlockBytes);
    }
    for (int k = 0; k < NT; ++k) {
      __m256i dots[kChunkBlocks];
      for (int i = 0; i < kChunkBlocks; ++i) {
        dots[i] = avx2_dot_i8(levels[i],
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k] + 32 * i)));
      }
      acc[k][half] =
          avx2_block32_fold(acc[k][half], dw, _mm256_loadu_ps(da[k]), avx2_block_sums8(dots));
    }
  }
};

}  // namespace
}  // namespace kvforge
