// Q5_K weights x Q8_K activations, AVX-512 (BW + VNNI). Q4_K's kernel with
// the 5th bit: per 64 values (one group of 32 bytes of nibbles = sub-blocks
// 2g and 2g+1) the nibbles are split into one vector, a byte test against
// the group's two qh bit planes gives a mask of the elements whose high bit
// is set, and a masked add puts 16 on them; the quants are then multiplied
// and scaled as q4_k_scales_avx512.h describes. The super-block's integers
// are exact, so results match the scalar kernel bit for bit (see
// kquant_accumulate.h).
#include "core/formats/q4_k.h"
#include "core/formats/q5_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/q4_k_scales_avx512.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q5_KAvx512Block {
  template <int NT>
  static void add_block(const BlockQ5_K& blk, const BlockQ8_K* const* a, int64_t b, float* acc) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i sixteen = _mm512_set1_epi8(16);
    // Bytes 0-31 select qh bit 0 (sub-block 0), bytes 32-63 bit 1 (sub-block 1);
    // group g shifts both left by 2g.
    const __m512i plane_bits = _mm512_inserti64x4(_mm512_set1_epi8(1), _mm256_set1_epi8(2), 1);
    const Q4_KScalesAvx512 scales = q4_k_scales_avx512(blk.scales);
    // qh in both halves: byte l of each half holds the high bits of element l of every sub-block.
    const __m512i qh =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh)));
    __m512i quants[4];
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
      const __m512i both =
          _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
      const __m512i nibbles = _mm512_and_si512(both, low4);  // [sub-block 2g | 2g+1]
      const __mmask64 high = _mm512_test_epi8_mask(qh, _mm512_slli_epi16(plane_bits, 2 * g));
      quants[g] = _mm512_mask_add_epi8(nibbles, high, nibbles, sixteen);
    }
    q4_k_fold_block_avx512<NT>(quants, scales, blk, a, b, acc);
  }
};

// Row `row`'s super-block b for a panel (kquant_panels_avx512.h): the 5-bit
// levels in element order, factors sc[j], coefs m[j].
void decode_panel_row(const MatmulTask& task, int64_t row, int64_t b, KquantPanelRow& out) {
  const BlockQ5_K& blk = weight_row<BlockQ5_K>(task, row)[b];
  const __m256i low4 = _mm256_set1_epi8(0x0f), bit0 = _mm256_set1_epi8(0x01);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh));
  // Bit n of every qh byte, moved to bit 4.
  auto high = [&](int n) {
    return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, n), bit0), 4);
  };
  for (int g = 0; g < 4; ++g) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
    auto* dst = reinterpret_cast<__m256i*>(out.quants + 64 * g);
    _mm256_store_si256(dst, _mm256_or_si256(_mm256_and_si256(q, low4), high(2 * g)));
    _mm256_store_si256(
        dst + 1, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), high(2 * g + 1)));
  }
  kquant_panel_row_q4_k_scales(blk.scales, blk.d, blk.dmin, out);
}

}  // namespace

void matmul_rows_q5_k_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_rows_avx512<kPanelWithMin, decode_panel_row>(
      task, r0, r1, KquantRowDot<BlockQ5_K, Q5_KAvx512Block>{task});
}

}  // namespace kvforge
