// MXFP4 blocks for the AVX2 kernel of avx2_block32_dot.h (dot_mxfp4_avx2.cpp): the
// 4-bit codes looked up in the doubled E2M1 levels by vpshufb, the scale
// from the E8M0 byte.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "core/formats/mxfp4.h"
#include "core/kernels/avx2_block32_dot.h"

namespace kvforge {
namespace {

struct MXFP4Avx2Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockMXFP4);

  static float scale(const uint8_t* block) { return e8m0_half(block[offsetof(BlockMXFP4, e)]); }

  // |level| <= 12 keeps avx2_dot_i8's pair sums in int16.
  static __m256i levels(const uint8_t* block) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Levels)));
    return _mm256_shuffle_epi8(table, avx2_nibbles_in_order(block + offsetof(BlockMXFP4, qs)));
  }
};

}  // namespace
}  // namespace kvforge
