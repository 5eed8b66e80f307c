// Q4_K weights x Q8_K activations, AVX-512 (BW + VNNI). Per 64 values (one
// group of 32 bytes of nibbles = sub-blocks 2g and 2g+1) the low and high
// nibbles form one vector of quants, multiplied and scaled as
// q4_k_scales_avx512.h describes. The super-block's integers are exact, so
// results match the scalar kernel bit for bit (see kquant_accumulate.h).
#include "core/formats/q4_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/q4_k_scales_avx512.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q4_KAvx512Block {
  template <int NT>
  static void add_block(const BlockQ4_K& blk, const BlockQ8_K* const* a, int64_t b, float* acc) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const Q4_KScalesAvx512 scales = q4_k_scales_avx512(blk.scales);
    __m512i nibbles[4];
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
      const __m512i both =
          _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
      nibbles[g] = _mm512_and_si512(both, low4);  // [sub-block 2g | sub-block 2g+1]
    }
    q4_k_fold_block_avx512<NT>(nibbles, scales, blk, a, b, acc);
  }
};

// Row `row`'s super-block b for a panel (kquant_panels_avx512.h): the
// nibbles in element order, factors sc[j], coefs m[j].
void decode_panel_row(const MatmulTask& task, int64_t row, int64_t b, KquantPanelRow& out) {
  const BlockQ4_K& blk = weight_row<BlockQ4_K>(task, row)[b];
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int g = 0; g < 4; ++g) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    _mm512_store_si512(out.quants + 64 * g, _mm512_and_si512(both, low4));
  }
  kquant_panel_row_q4_k_scales(blk.scales, blk.d, blk.dmin, out);
}

}  // namespace

void matmul_rows_q4_k_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_rows_avx512<kPanelWithMin, decode_panel_row>(
      task, r0, r1, KquantRowDot<BlockQ4_K, Q4_KAvx512Block>{task});
}

}  // namespace kvforge
