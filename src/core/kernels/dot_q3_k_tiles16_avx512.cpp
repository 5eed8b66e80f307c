// Q3_K weights in the Q3_KTiles16 layout (matmul.h) x Q8_K activations,
// AVX-512 VNNI: as dot_q4_k_q5_k_tiles16_avx512.cpp does for Q4_K.
//
// Element 128h + 32f + l (f < 4, l < 32) of a row has its low two bits at
// bit pair f of qs[32h + l] and its high bit at bit 4h + f of hmask[l]
// (formats/q3_k.h). A line of the tile holds 4 bytes l = 4c .. 4c + 3 of
// each of the 16 rows, so a qs line of half h and the hmask line of the
// same c give, per f, a mask (bit pair 3 after a shift), a bit test and a
// masked add: 4 stored quants u = low | high << 2 in [0, 7] (for f = 1, 2
// times 4^f) of sub-block 8h + 2f + (c >= 4) of every row, taken by one
// vpdpbusd per token. u is the unsigned operand
// vpdpbusd wants; as q = u - 4, per (row, token) the exact integers are
//   isum = sum_j s[j] * sum_{i in j} u_i * a_i - 4 * sum_j s[j] * bsums[j]
// with the signed scales s[j] = sc[j] - 32 as lanes: the scalar kernel's
// isum (dot_q3_k.cpp), folded as it does (kquant_accumulate_scaled): the
// same bits. Batches of kPanelMinTokens or more run kPanelQ3_K panels
// decoded from the tiles (kquant_tiles16_avx512.h).
#include <cstring>

#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/kquant_int8_scales_avx512.h"
#include "core/kernels/kquant_tiles16_avx512.h"

namespace kvforge {
namespace {

// One tile ahead, as dot_q4_k_q5_k_tiles16_avx512.cpp says why.
constexpr int64_t kPrefetchBytes = kQ3_KTileBytes;

// Where line c (c < 8) of half H's qs bytes and of the hmask bytes start.
template <int H>
constexpr int64_t qs_line(int c) {
  return H == 0 ? 128 * c : kQ3_KTileQsHigh + 64 * c;
}
constexpr int64_t hmask_line(int c) { return 128 * c + 64; }

// The 16 rows' signed scales: w[i] holds s[4i .. 4i + 3] of row n as the
// int8 bytes of lane n (q3_k_scales.h's word unpacking, on 16 rows at once).
struct Q3Scales {
  __m512i w[4];
};

static inline Q3Scales tile_scales(const uint8_t* tile) {
  const uint8_t* p = tile + kQ3_KTileScales;
  const __m512i w0 = _mm512_loadu_si512(p), w1 = _mm512_loadu_si512(p + 64),
                w2 = _mm512_loadu_si512(p + 128);
  const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30),
                bias = _mm512_set1_epi8(32);
  // Shifting a 32-bit lane moves bits across bytes; each mask keeps a byte's own.
  Q3Scales s;
  s.w[0] = _mm512_sub_epi8(
      _mm512_or_si512(_mm512_and_si512(w0, low4), _mm512_and_si512(_mm512_slli_epi32(w2, 4), top2)),
      bias);
  s.w[1] = _mm512_sub_epi8(
      _mm512_or_si512(_mm512_and_si512(w1, low4), _mm512_and_si512(_mm512_slli_epi32(w2, 2), top2)),
      bias);
  s.w[2] = _mm512_sub_epi8(
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w0, 4), low4), _mm512_and_si512(w2, top2)),
      bias);
  s.w[3] = _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w1, 4), low4),
                                           _mm512_and_si512(_mm512_srli_epi32(w2, 2), top2)),
                           bias);
  return s;
}

// Sub-block J's scale s[J] of the 16 rows as int32 lanes.
template <int J>
static inline __m512i row_scale(const Q3Scales& s) {
  return _mm512_srai_epi32(_mm512_slli_epi32(s.w[J / 4], 24 - 8 * (J % 4)), 24);
}

// Bit pairs 1 and 2 stay where they are in their qs byte: their quants
// come out times 4^F (at most 7 * 16, still a byte), one mask instead of a
// shift and a mask per line, and the sub-block sums are shifted back once.
constexpr int quant_shift(int f) { return f == 1 || f == 2 ? 2 * f : 0; }

// The stored quants u, times 2^quant_shift(F), of elements 128H + 32F + 4c
// .. + 3 of the 16 rows from the qs line q and the hmask line hm.
template <int H, int F>
static inline __m512i stored_quants(__m512i q, __m512i hm) {
  constexpr int shift = quant_shift(F);
  const __m512i low = shift ? _mm512_and_si512(q, _mm512_set1_epi8(char(3 << shift)))
                            : _mm512_and_si512(_mm512_srli_epi16(q, 2 * F), _mm512_set1_epi8(3));
  const __mmask64 high = _mm512_test_epi8_mask(hm, _mm512_set1_epi8(char(1 << (4 * H + F))));
  return _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(char(4 << shift)));
}

// The 4 quant vectors of line c of half H: u[f] (times 2^quant_shift(f)) for
// elements 128H + 32f + 4c .. + 3, of sub-block 8H + 2f + (c >= 4).
struct Q3Quants {
  __m512i u[4];
};

template <int H>
static inline Q3Quants chunk_quants(const uint8_t* tile, int c) {
  const __m512i q = _mm512_loadu_si512(tile + qs_line<H>(c));
  const __m512i hm = _mm512_loadu_si512(tile + hmask_line(c));
  return {{stored_quants<H, 0>(q, hm), stored_quants<H, 1>(q, hm), stored_quants<H, 2>(q, hm),
           stored_quants<H, 3>(q, hm)}};
}

// The Q3_K super-block math of kquant_tiles16_avx512.h's walk.
struct Q3_KTiles : KquantTilesShape<8, kPanelQ3_K, kQ3_KTileBytes, true, int8_scale_sum_pairs> {
  // Super-block b for NT tokens: token k's 16 row sums added to acc[k].
  template <int NT>
  [[gnu::always_inline]] static void block(KquantTile t, const BlockQ8_K* const* a,
                                           const int32_t* const* pairs, int64_t b, __m512* acc) {
    const uint8_t* tile = t.tile;
    // The next tile's scale lines a whole tile ahead: they sit at a tile's
    // end but are read first (tile_scales).
    for (int i = 0; i < 3; ++i)
      _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + kQ3_KTileScales + 64 * i),
                   _MM_HINT_T0);
    const Q3Scales s = tile_scales(tile);
    __m512i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm512_setzero_si512();
    // Lines c = 4P .. 4P + 3 of half H: sub-blocks 8H + 2f + P.
    const auto pass = [&]<int H, int P>() {
      __m512i sums[4][NT];
      for (int f = 0; f < 4; ++f)
        for (int k = 0; k < NT; ++k) sums[f][k] = _mm512_setzero_si512();
      for (int c = 4 * P; c < 4 * P + 4; ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + qs_line<H>(c)),
                     _MM_HINT_T0);
        if constexpr (H == 0)
          _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + hmask_line(c)),
                       _MM_HINT_T0);
        const Q3Quants w = chunk_quants<H>(tile, c);
        for (int k = 0; k < NT; ++k)
          for (int f = 0; f < 4; ++f) {
            int32_t quad;
            std::memcpy(&quad, a[k][b].qs + 128 * H + 32 * f + 4 * c, 4);
            sums[f][k] = _mm512_dpbusd_epi32(sums[f][k], w.u[f], _mm512_set1_epi32(quad));
          }
      }
      const __m512i sc[4] = {row_scale<8 * H + P>(s), row_scale<8 * H + 2 + P>(s),
                             row_scale<8 * H + 4 + P>(s), row_scale<8 * H + 6 + P>(s)};
      for (int k = 0; k < NT; ++k) {
        // Exact multiples of 4 and 16: the shifts divide exactly.
        sums[1][k] = _mm512_srai_epi32(sums[1][k], quant_shift(1));
        sums[2][k] = _mm512_srai_epi32(sums[2][k], quant_shift(2));
        for (int f = 0; f < 4; ++f)
          isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(sums[f][k], sc[f]));
      }
    };
    pass.template operator()<0, 0>();
    pass.template operator()<0, 1>();
    pass.template operator()<1, 0>();
    pass.template operator()<1, 1>();
    // sum_j s[j] * bsums[j] (kquant_int8_scales_avx512.h).
    const Int8ScalePairs sp = int8_scale_pairs(s.w);
    const __m512 dv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.d)));
    for (int k = 0; k < NT; ++k) {
      const __m512i csum = int8_scale_bsum_dot(sp, pairs[k] + 8 * b);
      const __m512i exact = _mm512_sub_epi32(isum[k], _mm512_slli_epi32(csum, 2));
      // acc + (d * da) * isum, rounded step by step (kquant_accumulate_scaled).
      __m512 scaled =
          _mm512_mul_ps(_mm512_mul_ps(dv, _mm512_set1_ps(a[k][b].d)), _mm512_cvtepi32_ps(exact));
      __asm__("" : "+v"(scaled));  // rounded here: never fused into the add
      acc[k] = _mm512_add_ps(acc[k], scaled);
    }
  }

  // A tile as a kPanelQ3_K panel: the stored quants u in [0, 7], factors the
  // signed scales, coefs the same scales as int16 pairs (the + 4 offset's).
  static void panel(KquantTile t, KquantPanelBlock& p) {
    const uint8_t* tile = t.tile;
    const auto half = [&]<int H>() {
      for (int c = 0; c < 8; ++c) {
        const Q3Quants w = chunk_quants<H>(tile, c);
        const __m512i u1 = _mm512_and_si512(_mm512_srli_epi16(w.u[1], quant_shift(1)),
                                            _mm512_set1_epi8(7)),
                      u2 = _mm512_and_si512(_mm512_srli_epi16(w.u[2], quant_shift(2)),
                                            _mm512_set1_epi8(7));
        _mm512_store_si512(p.quants[32 * H + c], w.u[0]);
        _mm512_store_si512(p.quants[32 * H + 8 + c], u1);
        _mm512_store_si512(p.quants[32 * H + 16 + c], u2);
        _mm512_store_si512(p.quants[32 * H + 24 + c], w.u[3]);
      }
    };
    half.template operator()<0>();
    half.template operator()<1>();
    store_int8_scale_panel(tile_scales(tile).w, t.d, p);
  }
};

}  // namespace

void matmul_rows_q3_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_tiles16<Q3_KTiles>(task, r0, r1);
}

}  // namespace kvforge
