// Q4_K weights x Q8_K activations, AVX-512 (BW + VNNI). Per 64 values (one
// group of 32 bytes of nibbles = sub-blocks 2g and 2g+1): vpmaddubsw
// (unsigned nibbles x signed activations, pair sums <= 2*15*127) then
// vpdpwssd with the two sub-block scales; the mins use the activation block
// sums. The super-block's integers are exact, so results match the scalar
// kernel bit for bit (see kquant_accumulate.h).
#include "core/formats/q4_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/q4_k_scales.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q4_KAvx512Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w =
        reinterpret_cast<const BlockQ4_K*>(task.weights + row * int64_t(task.row_bytes));
    const int64_t n_blocks = task.cols / BlockQ4_K::kElems;
    const BlockQ8_K* a[NT];
    float acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_k + (t0 + k) * n_blocks;
      acc[k] = 0.0f;
    }
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m256i min_lanes =
        _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    const __m512i pair_lanes = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockQ4_K& blk = w[b];
      uint32_t packed[4];
      q4_k_unpack_scale_bytes(blk.scales, packed);
      // int16 lanes: sc[0..7], m[0..7].
      const __m256i sc_m = _mm256_cvtepu8_epi16(
          _mm_setr_epi32(int(packed[0]), int(packed[1]), int(packed[2]), int(packed[3])));
      // bsums[2j] and bsums[2j+1] both belong to sub-block j: lanes m0 m0 m1 m1 ... m7 m7.
      const __m256i mins = _mm256_permutexvar_epi16(min_lanes, sc_m);
      __m512i nibbles[4], scales[4];
      for (int g = 0; g < 4; ++g) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
        const __m512i both =
            _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
        nibbles[g] = _mm512_and_si512(both, low4);  // [sub-block 2g | sub-block 2g+1]
        // int16 lanes 0-15: sc[2g], lanes 16-31: sc[2g+1].
        scales[g] =
            _mm512_permutexvar_epi16(_mm512_add_epi16(pair_lanes, _mm512_set1_epi16(short(2 * g))),
                                     _mm512_castsi256_si512(sc_m));
      }
      const float d = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      const float dmin = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.dmin));
      for (int k = 0; k < NT; ++k) {
        const BlockQ8_K& ak = a[k][b];
        __m512i isum = _mm512_setzero_si512();
        for (int g = 0; g < 4; ++g) {
          const __m512i p = _mm512_maddubs_epi16(nibbles[g], _mm512_loadu_si512(ak.qs + 64 * g));
          isum = _mm512_dpwssd_epi32(isum, p, scales[g]);
        }
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ak.bsums));
        int32_t total = 0, msum = 0;
        avx512_hsum2_epi32(isum, _mm256_madd_epi16(bsums, mins), total, msum);
        acc[k] = kquant_accumulate(acc[k], d, dmin, ak.d, total, msum);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace

void matmul_rows_q4_k_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<8>(task, r0, r1, Q4_KAvx512Dot{task});
}

}  // namespace kvforge
