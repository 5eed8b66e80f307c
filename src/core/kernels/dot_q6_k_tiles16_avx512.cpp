// Q6_K weights in the Q6_KTiles16 layout (matmul.h) x Q8_K activations,
// AVX-512 VNNI: as dot_q4_k_q5_k_tiles16_avx512.cpp does for Q4_K.
//
// In half h of a super-block, 4 bytes l..l+3 of ql at 64h + l and at
// 64h + l + 32 and of qh at 32h + l give 4 quants (0..63) of each row at
// elements 128h + l, + 32, + 64 and + 96 (formats/q6_k.h); the tile holds
// those bytes of the 16 rows side by side, 3 lines one after another, so
// they are 3 loads and a few masks for all rows, then one vpdpbusd per
// token and quant vector, reading the tile front to back. Per (row, token) the
// exact integers are the scalar kernel's,
//   isum = sum_s sc[s] * sum_{i in s} q_i * a_i - 32 * sum_s sc[s] * bsums[s],
// folded as it does (kquant_accumulate with dmin = 0): the same bits.
#include <cstring>

#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/kquant_int8_scales_avx512.h"
#include "core/kernels/kquant_tiles16_avx512.h"

namespace kvforge {
namespace {

// One tile ahead, as dot_q4_k_q5_k_tiles16_avx512.cpp says why.
constexpr int64_t kPrefetchBytes = kQ6_KTileBytes;

// Sub-block s's int8 scale of the 16 rows as int32 lanes.
template <int S>
static inline __m512i row_scale(const uint8_t* tile) {
  const __m512i v = _mm512_loadu_si512(tile + kQ6_KTileScales + 64 * (S / 4));
  return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * (S % 4)), 24);
}

// The 4 quant vectors of chunk c of quarter q = 2h + s (l = 16s + 4c):
// elements 128h + l + 32k, k < 4.
struct Q6Quants {
  __m512i q[4];
};

static inline Q6Quants chunk_quants(const uint8_t* tile, int q, int c) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  const uint8_t* lines = tile + 768 * q + 192 * c;
  const __m512i a = _mm512_loadu_si512(lines);
  const __m512i b = _mm512_loadu_si512(lines + 64);
  const __m512i hb = _mm512_loadu_si512(lines + 128);
  // 16-bit shifts move bits across the two bytes of a lane; each mask keeps
  // only bits that came from their own byte.
  Q6Quants r;
  r.q[0] = _mm512_or_si512(_mm512_and_si512(a, low4),
                           _mm512_and_si512(_mm512_slli_epi16(hb, 4), bits45));
  r.q[1] = _mm512_or_si512(_mm512_and_si512(b, low4),
                           _mm512_and_si512(_mm512_slli_epi16(hb, 2), bits45));
  r.q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), low4),
                           _mm512_and_si512(hb, bits45));
  r.q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b, 4), low4),
                           _mm512_and_si512(_mm512_srli_epi16(hb, 2), bits45));
  return r;
}

// The Q6_K super-block math of kquant_tiles16_avx512.h's walk.
struct Q6_KTiles : KquantTilesShape<8, kPanelQ6_K, kQ6_KTileBytes, true, int8_scale_sum_pairs> {
  // Super-block b for NT tokens: token k's 16 row sums added to acc[k].
  template <int NT>
  [[gnu::always_inline]] static void block(KquantTile t, const BlockQ8_K* const* a,
                                           const int32_t* const* pairs, int64_t b, __m512* acc) {
    const uint8_t* tile = t.tile;
    // The next tile's scale lines now: this tile's are read first (the
    // quarters' row scales), so fetching them after the quarters left each
    // tile's start waiting on DRAM.
    for (int i = 0; i < 4; ++i)
      _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + kQ6_KTileScales + 64 * i),
                   _MM_HINT_T0);
    __m512i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm512_setzero_si512();
    // Elements 128h + 16s .. + 15 (+ 32k): sub-blocks 8h + s + 2k.
    const auto quarter = [&]<int H, int S>() {
      constexpr int q = 2 * H + S;
      __m512i sums[4][NT];
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < NT; ++k) sums[j][k] = _mm512_setzero_si512();
      for (int c = 0; c < 4; ++c) {
        for (int i = 0; i < 3; ++i)
          _mm_prefetch(
              reinterpret_cast<const char*>(tile + kPrefetchBytes + 768 * q + 192 * c + 64 * i),
              _MM_HINT_T0);
        const Q6Quants w = chunk_quants(tile, q, c);
        const int l = 16 * S + 4 * c;
        for (int k = 0; k < NT; ++k)
          for (int j = 0; j < 4; ++j) {
            int32_t quad;
            std::memcpy(&quad, a[k][b].qs + 128 * H + l + 32 * j, 4);
            sums[j][k] = _mm512_dpbusd_epi32(sums[j][k], w.q[j], _mm512_set1_epi32(quad));
          }
      }
      const __m512i sc[4] = {row_scale<8 * H + S>(tile), row_scale<8 * H + S + 2>(tile),
                             row_scale<8 * H + S + 4>(tile), row_scale<8 * H + S + 6>(tile)};
      for (int k = 0; k < NT; ++k)
        for (int j = 0; j < 4; ++j)
          isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(sums[j][k], sc[j]));
    };
    quarter.template operator()<0, 0>();
    quarter.template operator()<0, 1>();
    quarter.template operator()<1, 0>();
    quarter.template operator()<1, 1>();
    // sum_s sc[s] * bsums[s] (kquant_int8_scales_avx512.h).
    __m512i words[4];
    for (int i = 0; i < 4; ++i) words[i] = _mm512_loadu_si512(tile + kQ6_KTileScales + 64 * i);
    const Int8ScalePairs sp = int8_scale_pairs(words);
    const __m512 dv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.d)));
    for (int k = 0; k < NT; ++k) {
      const __m512i csum = int8_scale_bsum_dot(sp, pairs[k] + 8 * b);
      const __m512i exact = _mm512_sub_epi32(isum[k], _mm512_slli_epi32(csum, 5));
      acc[k] = kquant_fold_min16(acc[k], dv, _mm512_setzero_ps(), a[k][b].d, exact,
                                 _mm512_setzero_si512());
    }
  }

  // A tile as a kPanelQ6_K panel: quants 0..63, factors the scales, coefs the
  // same scales as int16 pairs (the offset's).
  static void panel(KquantTile t, KquantPanelBlock& p) {
    const uint8_t* tile = t.tile;
    for (int q = 0; q < 4; ++q)
      for (int c = 0; c < 4; ++c) {
        const Q6Quants w = chunk_quants(tile, q, c);
        const int h = q / 2, l = 16 * (q % 2) + 4 * c;
        for (int j = 0; j < 4; ++j) _mm512_store_si512(p.quants[32 * h + 8 * j + l / 4], w.q[j]);
      }
    __m512i words[4];
    for (int i = 0; i < 4; ++i) words[i] = _mm512_loadu_si512(tile + kQ6_KTileScales + 64 * i);
    store_int8_scale_panel(words, t.d, p);
  }
};

}  // namespace

void matmul_rows_q6_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_tiles16<Q6_KTiles>(task, r0, r1);
}

}  // namespace kvforge
