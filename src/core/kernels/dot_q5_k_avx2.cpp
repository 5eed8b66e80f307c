// Q5_K weights x Q8_K activations, AVX2. Q4_K's kernel with the 5th bit:
// per 32-value sub-block the high bits are shifted from their qh bit plane
// to bit 4 of each byte and or-ed onto the nibbles; the quants are then
// multiplied and scaled as q4_k_scales_avx2.h describes. The super-block's
// integers are exact, so results match the scalar kernel bit for bit (see
// kquant_accumulate.h).
#include <immintrin.h>

#include "core/formats/q5_k.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/q4_k_scales_avx2.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Bit `bit` of every byte of qh moved to bit 4 (0x10), the rest cleared. The
// 16-bit shifts move at most 4 places, so no bit crosses into the next byte
// at the position kept.
template <int bit>
__m256i high_bit_at_4(__m256i qh) {
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  if constexpr (bit < 4) return _mm256_and_si256(_mm256_slli_epi16(qh, 4 - bit), bit4);
  if constexpr (bit > 4) return _mm256_and_si256(_mm256_srli_epi16(qh, bit - 4), bit4);
  return _mm256_and_si256(qh, bit4);
}

// The 5-bit quants of group g (elements 64g .. 64g+63): lo for sub-block
// 2g, hi for 2g+1.
template <int g>
void group_quants(const BlockQ5_K& blk, __m256i qh, __m256i& lo, __m256i& hi) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
  lo = _mm256_or_si256(_mm256_and_si256(q, low4), high_bit_at_4<2 * g>(qh));
  hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4),
                       high_bit_at_4<2 * g + 1>(qh));
}

struct Q5_KAvx2Block {
  template <int NT, int g>
  static void group(const BlockQ5_K& blk, __m256i qh, const Q4_KScalesAvx2& scales,
                    const BlockQ8_K* const* a, int64_t b, __m256i* isum) {
    __m256i lo, hi;
    group_quants<g>(blk, qh, lo, hi);
    const __m256i sc_lo = q4_k_scale_avx2(scales, 2 * g);
    const __m256i sc_hi = q4_k_scale_avx2(scales, 2 * g + 1);
    for (int k = 0; k < NT; ++k) {
      isum[k] =
          _mm256_add_epi32(isum[k], q4_k_group_dot_avx2(lo, hi, sc_lo, sc_hi, a[k][b].qs + 64 * g));
    }
  }

  template <int NT>
  static void add_block(const BlockQ5_K& blk, const BlockQ8_K* const* a, int64_t b, float* acc) {
    const Q4_KScalesAvx2 scales = q4_k_scales_avx2(blk.scales);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh));
    __m256i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
    group<NT, 0>(blk, qh, scales, a, b, isum);
    group<NT, 1>(blk, qh, scales, a, b, isum);
    group<NT, 2>(blk, qh, scales, a, b, isum);
    group<NT, 3>(blk, qh, scales, a, b, isum);
    q4_k_fold_block_avx2<NT>(isum, scales, blk, a, b, acc);
  }
};

}  // namespace

void matmul_rows_q5_k_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, KquantRowDot<BlockQ5_K, Q5_KAvx2Block>{task});
}

}  // namespace kvforge
