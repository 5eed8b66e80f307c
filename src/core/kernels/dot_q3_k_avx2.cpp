// Q3_K weights x Q8_K activations, AVX2. One 32-byte load of qs holds the low
// bits of 128 elements; shifting it by 2f and masking gives those of elements
// 128h + 32f + (0..31) (sub-block 8h + 2f in the low 128-bit lane, 8h + 2f + 1
// in the high one), and bit 4h + f of the 32 hmask bytes their high bits.
// The quants are taken as the stored u = low | high << 2 in [0, 7]:
// vpmaddubsw (u x signed activations, pair sums <= 2*7*127) then vpmaddwd
// with the two sub-blocks' signed scales s = sc - 32, and since q = u - 4,
//   isum = sum_j s[j] * sum u * a  -  4 * sum_j s[j] * bsums[j].
//
// The integer sums are finished four (super-block, token) pairs at a time
// (kquant_groups_avx2.h) and folded with kquant_accumulate_scaled_terms,
// so the bits match the scalar kernel's; decode groups four super-blocks of
// the row (kquant_decode_row.h).
#include <immintrin.h>

#include "core/formats/q3_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_decode_row.h"
#include "core/kernels/kquant_groups_avx2.h"
#include "core/kernels/q3_k_scales_avx2.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Bit `bit` of every byte of v, moved to bit 2 (value 4); other bits zero.
__m256i high_bit_to_4(__m256i v, int bit) {
  const __m256i four = _mm256_set1_epi8(4);
  if (bit < 2) return _mm256_and_si256(_mm256_slli_epi16(v, 2 - bit), four);
  return _mm256_and_si256(_mm256_srli_epi16(v, bit - 2), four);
}

// Exact integer sums of super-block `blk` and N tokens' blocks a[k]: the
// lanes of isum[k] add up to sum_j s[j] * sum u * a, those of offset[k] to
// sum_j s[j] * bsums[j]. The weights are unpacked once for all N tokens.
template <int N>
void q3_k_block_sums(const BlockQ3_K& blk, const BlockQ8_K* const* a, __m256i* isum,
                     __m256i* offset) {
  const __m128i s8 = _mm_sub_epi8(q3_k_scales_avx2(blk), _mm_set1_epi8(32));
  // int16 lanes: s[0], s[2], ..., s[14] | s[1], s[3], ..., s[15]; lane pair k
  // of the two 128-bit halves is (s[2k], s[2k+1]).
  const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i s_even_odd = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s8, even_odd));
  const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.hmask));
  for (int k = 0; k < N; ++k) isum[k] = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * h));
    for (int f = 0; f < 4; ++f) {
      const int pair = 4 * h + f;  // also the hmask bit of these 32 elements
      const __m256i u =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 2 * f), _mm256_set1_epi8(3)),
                          high_bit_to_4(hmask, pair));
      const __m256i scales =
          _mm256_shuffle_epi8(s_even_odd, _mm256_set1_epi16(short(0x0100 + 0x0202 * pair)));
      for (int k = 0; k < N; ++k) {
        const auto* aq = reinterpret_cast<const __m256i*>(a[k]->qs + 32 * pair);
        const __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256(aq));
        isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(p, scales));
      }
    }
  }
  const __m256i s16 = _mm256_cvtepi8_epi16(s8);  // s[0..15]
  for (int k = 0; k < N; ++k) {
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k]->bsums));
    offset[k] = _mm256_madd_epi16(bsums, s16);
  }
}

// [i0 o0 i1 o1 ...] (avx2_reduce_four_pairs of isum and offset) to the
// blocks' integer dot products i_n - 4 o_n in lanes 2n (lanes 2n+1 keep o_n).
inline __m256i totals(__m256i ints) {
  return _mm256_sub_epi32(ints, _mm256_slli_epi32(_mm256_srli_epi64(ints, 32), 2));
}

struct Q3_KAvx2Format {
  static constexpr bool kMin = false;

  template <int N>
  static void block_sums(const BlockQ3_K& blk, const BlockQ8_K* const* a, __m256i* isum,
                         __m256i* msum) {
    q3_k_block_sums<N>(blk, a, isum, msum);
  }
  static uint32_t scales(const BlockQ3_K& blk) { return blk.d; }
  static __m256i adjust(__m256i ints) { return totals(ints); }
};

}  // namespace

void matmul_rows_q3_k_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, KquantGroupsAvx2Dot<BlockQ3_K, Q3_KAvx2Format>{task});
}

}  // namespace kvforge
