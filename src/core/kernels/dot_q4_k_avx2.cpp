// Q4_K weights x Q8_K activations, AVX2. Per 32-value sub-block, its
// nibbles multiplied and scaled as q4_k_scales_avx2.h describes. The
// super-block's integers are exact, so results match the scalar kernel bit
// for bit (see kquant_accumulate.h).
#include <immintrin.h>

#include "core/formats/q4_k.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/q4_k_scales_avx2.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q4_KAvx2Block {
  template <int NT>
  static void add_block(const BlockQ4_K& blk, const BlockQ8_K* const* a, int64_t b, float* acc) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const Q4_KScalesAvx2 scales = q4_k_scales_avx2(blk.scales);
    __m256i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
      const __m256i lo = _mm256_and_si256(q, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      const __m256i sc_lo = q4_k_scale_avx2(scales, 2 * g);
      const __m256i sc_hi = q4_k_scale_avx2(scales, 2 * g + 1);
      for (int k = 0; k < NT; ++k) {
        isum[k] = _mm256_add_epi32(isum[k],
                                   q4_k_group_dot_avx2(lo, hi, sc_lo, sc_hi, a[k][b].qs + 64 * g));
      }
    }
    q4_k_fold_block_avx2<NT>(isum, scales, blk, a, b, acc);
  }
};

}  // namespace

void matmul_rows_q4_k_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, KquantRowDot<BlockQ4_K, Q4_KAvx2Block>{task});
}

}  // namespace kvforge
