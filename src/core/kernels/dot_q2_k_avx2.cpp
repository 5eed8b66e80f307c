// Q2_K weights x Q8_K activations, AVX2. One 32-byte load of qs holds 128
// elements; shifting it by 2f and masking gives the 32 quants of elements
// 128h + 32f + (0..31), i.e. sub-block 8h + 2f in the low 128-bit lane and
// 8h + 2f + 1 in the high one. vpmaddubsw (quants 0..3 x signed activations,
// pair sums <= 2*3*127) then vpmaddwd with those two sub-blocks' scales; the
// mins use the activation block sums.
//
// The integer sums are finished four (super-block, token) pairs at a time
// (kquant_groups_avx2.h) and folded with kquant_accumulate_terms, so the bits
// match the scalar kernel's; decode groups four super-blocks of the row
// (kquant_decode_row.h).
#include <immintrin.h>

#include "core/formats/q2_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_decode_row.h"
#include "core/kernels/kquant_groups_avx2.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// d | dmin << 16, as avx2_kquant_terms takes them.
inline uint32_t scale_pair(const BlockQ2_K& blk) {
  return uint32_t(blk.d) | uint32_t(blk.dmin) << 16;
}

// Exact integer sums of super-block `blk` and N tokens' blocks a[k]: the
// lanes of isum[k] add up to sum_j sc[j] * sum q * a, those of msum[k] to
// sum_j m[j] * bsums[j]. The weights are unpacked once for all N tokens.
template <int N>
void q2_k_block_sums(const BlockQ2_K& blk, const BlockQ8_K* const* a, __m256i* isum,
                     __m256i* msum) {
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
  // int16 lanes: sc[0], sc[2], ..., sc[14] | sc[1], sc[3], ..., sc[15]; lane
  // pair k of the two 128-bit halves is (sc[2k], sc[2k+1]).
  const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i sc_even_odd =
      _mm256_cvtepu8_epi16(_mm_shuffle_epi8(_mm_and_si128(raw, low4), even_odd));
  const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), low4));
  for (int k = 0; k < N; ++k) isum[k] = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * h));
    for (int f = 0; f < 4; ++f) {
      const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * f), _mm256_set1_epi8(3));
      // Broadcast int16 lane 4h + f of each half: sc[8h + 2f] | sc[8h + 2f + 1].
      const int pair = 4 * h + f;
      const __m256i scales =
          _mm256_shuffle_epi8(sc_even_odd, _mm256_set1_epi16(short(0x0100 + 0x0202 * pair)));
      for (int k = 0; k < N; ++k) {
        const auto* aq = reinterpret_cast<const __m256i*>(a[k]->qs + 32 * pair);
        const __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256(aq));
        isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(p, scales));
      }
    }
  }
  for (int k = 0; k < N; ++k) {
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k]->bsums));
    msum[k] = _mm256_madd_epi16(bsums, mins);
  }
}

struct Q2_KAvx2Format {
  static constexpr bool kMin = true;

  template <int N>
  static void block_sums(const BlockQ2_K& blk, const BlockQ8_K* const* a, __m256i* isum,
                         __m256i* msum) {
    q2_k_block_sums<N>(blk, a, isum, msum);
  }
  static uint32_t scales(const BlockQ2_K& blk) { return scale_pair(blk); }
  static __m256i adjust(__m256i ints) { return ints; }
};

}  // namespace

void matmul_rows_q2_k_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, KquantGroupsAvx2Dot<BlockQ2_K, Q2_KAvx2Format>{task});
}

}  // namespace kvforge
