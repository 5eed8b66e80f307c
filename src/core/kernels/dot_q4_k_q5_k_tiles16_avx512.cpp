// Q4_K and Q5_K weights in the Q4_KTiles16 / Q5_KTiles16 layouts (matmul.h)
// x Q8_K activations, AVX-512 VNNI.
//
// The native kernels unpack each row's super-block on its own and leave its
// products spread over lanes to be summed; for decode that work, not the
// memory stream, sets the speed. Here 64 bytes hold 4 nibble bytes of each
// of 16 rows: their low nibbles are 4 quants of sub-block 2g of every row,
// their high nibbles 4 of sub-block 2g + 1, so one vpdpbusd against a
// token's 4 quants broadcast adds 4 products to each row's lane. After a
// sub-block's 8 of them lane n holds row n's exact sub-block sum, which
// takes its 6-bit scale with one multiply; the mins meet the token's block
// sums the same way. Each (row, token) then gets the scalar kernel's
// integers and its fold, in its order (kquant_accumulate.h): the same bits.
// Q5_K's fifth bits come from 8 more lines of the rows' qh bytes, 4 of each
// row per line as for the nibbles: bit 2g of each byte for sub-block 2g, bit
// 2g + 1 for sub-block 2g + 1, moved to bit 4 of each quant.
//
// The walk over groups and tokens, and the panels for long batches:
// kquant_tiles16_avx512.h.
#include <cstring>
#include <utility>

#include "core/formats/q8_k.h"
#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/kquant_tiles16_avx512.h"

namespace kvforge {
namespace {

// Where a tile's parts start (WeightLayout, matmul.h); qh < 0: none (Q4_K).
struct TileLayout {
  int64_t bytes, qh, scales, d, dmin;
};
constexpr TileLayout kQ4_K{kQ4_KTileBytes, -1, kQ4_KTileScales, kQ4_KTileD, kQ4_KTileDmin};
constexpr TileLayout kQ5_K{kQ5_KTileBytes, kQ5_KTileQh, kQ5_KTileScales, kQ5_KTileD, kQ5_KTileDmin};

// Bit `Bit` of each byte of v moved to bit 4 (Q5_K's fifth bit of a quant).
template <int Bit>
static inline __m512i bit_to_4(__m512i v) {
  __m512i shifted;
  if constexpr (Bit <= 4)
    shifted = _mm512_slli_epi16(v, 4 - Bit);
  else
    shifted = _mm512_srli_epi16(v, Bit - 4);
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x10));  // only each byte's own bit
}

// A group super-block's 6-bit scales and mins (formats/q4_k.h), lane n for
// row n: sc[0] holds sc0..sc3 as bytes, sc[1] sc4..sc7; m[0] m0..m3, m[1] m4..m7.
struct TileScales {
  __m512i sc[2];
  __m512i m[2];
};

static inline TileScales tile_scales(const uint8_t* scales) {
  const __m512i v0 = _mm512_loadu_si512(scales);
  const __m512i v1 = _mm512_loadu_si512(scales + 64);
  const __m512i v2 = _mm512_loadu_si512(scales + 128);
  const __m512i six_bits = _mm512_set1_epi8(0x3f), low4 = _mm512_set1_epi8(0x0f),
                top2 = _mm512_set1_epi8(0x30);
  // j < 4: sc = b[j] & 63, m = b[j + 4] & 63; j >= 4: sc = (b[j + 4] & 15) |
  // (b[j - 4] >> 6) << 4, m = (b[j + 4] >> 4) | (b[j] >> 6) << 4. Shifting a
  // 32-bit lane moves bits across bytes; the masks keep each byte's own.
  TileScales s;
  s.sc[0] = _mm512_and_si512(v0, six_bits);
  s.m[0] = _mm512_and_si512(v1, six_bits);
  s.sc[1] =
      _mm512_or_si512(_mm512_and_si512(v2, low4), _mm512_and_si512(_mm512_srli_epi32(v0, 2), top2));
  s.m[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(v2, 4), low4),
                           _mm512_and_si512(_mm512_srli_epi32(v1, 2), top2));
  return s;
}

// Byte j % 4 of each lane of v[j / 4] as int32 lanes: sub-block j's scale
// (or min) of the 16 rows.
template <int J>
static inline __m512i lane_byte(const __m512i v[2]) {
  return _mm512_and_si512(_mm512_srli_epi32(v[J / 4], 8 * (J % 4)), _mm512_set1_epi32(0xff));
}

// int16 pairs m[2q] | m[2q + 1] << 16 (q < 4) of the 16 rows.
template <int Q>
static inline __m512i min_pair(const __m512i m[2]) {
  const __m512i v = _mm512_srli_epi32(m[Q / 2], 16 * (Q % 2));  // bytes m[2q], m[2q+1] at 0, 1
  return _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(0xff)),
                         _mm512_slli_epi32(_mm512_and_si512(v, _mm512_set1_epi32(0xff00)), 8));
}

// A token's sub-block sums A_j = bsums[2j] + bsums[2j + 1] of one super-block
// as the 4 int16 pairs A_2q | A_2q+1 << 16 (|A_j| <= 32 * 128: exact).
static inline void block_sum_pairs(const BlockQ8_K& a, int32_t pairs[4]) {
  for (int q = 0; q < 4; ++q) {
    const int32_t lo = a.bsums[4 * q] + a.bsums[4 * q + 1];
    const int32_t hi = a.bsums[4 * q + 2] + a.bsums[4 * q + 3];
    pairs[q] = int32_t(uint32_t(uint16_t(lo)) | uint32_t(uint16_t(hi)) << 16);
  }
}

// Quants of sub-blocks 2G (lo) and 2G + 1 (hi), 4 of each row, from line C
// of the tile's nibbles (and for Q5_K line C of its qh bytes).
template <TileLayout L, int G>
static inline void chunk_quants(const uint8_t* tile, int c, __m512i& lo, __m512i& hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i w = _mm512_loadu_si512(tile + 64 * (8 * G + c));
  lo = _mm512_and_si512(w, low4);
  hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
  if constexpr (L.qh >= 0) {
    const __m512i h = _mm512_loadu_si512(tile + L.qh + 64 * c);
    lo = _mm512_or_si512(lo, bit_to_4<2 * G>(h));
    hi = _mm512_or_si512(hi, bit_to_4<2 * G + 1>(h));
  }
}

// The Q4_K / Q5_K super-block math of kquant_tiles16_avx512.h's walk.
template <TileLayout L>
struct MinTiles : KquantTilesShape<4, kPanelWithMin, L.bytes, false, block_sum_pairs> {
  // Super-block b for NT tokens: token k's 16 row sums added to acc[k].
  template <int NT>
  [[gnu::always_inline]] static void block(KquantTile t, const BlockQ8_K* const* a,
                                           const int32_t* const* pairs, int64_t b, __m512* acc) {
    // How far ahead of its loads a pass prefetches (one tile): decode streams
    // the weights once, and the hardware prefetchers alone left it waiting on DRAM.
    constexpr int64_t kPrefetchBytes = L.bytes;
    const uint8_t* tile = t.tile;
    const TileScales s = tile_scales(tile + L.scales);
    for (int64_t l = 2048; l < L.bytes; l += 64)
      _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + l), _MM_HINT_T0);
    __m512i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm512_setzero_si512();
    const auto sub_block_pair = [&]<int G>() {  // sub-blocks 2G and 2G + 1
      __m512i lo_sum[NT], hi_sum[NT];
      for (int k = 0; k < NT; ++k) lo_sum[k] = hi_sum[k] = _mm512_setzero_si512();
      for (int c = 0; c < 8; ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + 64 * (8 * G + c)),
                     _MM_HINT_T0);
        __m512i lo, hi;
        chunk_quants<L, G>(tile, c, lo, hi);
        for (int k = 0; k < NT; ++k) {
          int32_t q_lo, q_hi;
          std::memcpy(&q_lo, a[k][b].qs + 64 * G + 4 * c, 4);
          std::memcpy(&q_hi, a[k][b].qs + 64 * G + 32 + 4 * c, 4);
          lo_sum[k] = _mm512_dpbusd_epi32(lo_sum[k], lo, _mm512_set1_epi32(q_lo));
          hi_sum[k] = _mm512_dpbusd_epi32(hi_sum[k], hi, _mm512_set1_epi32(q_hi));
        }
      }
      const __m512i f_lo = lane_byte<2 * G>(s.sc), f_hi = lane_byte<2 * G + 1>(s.sc);
      for (int k = 0; k < NT; ++k)
        isum[k] = _mm512_add_epi32(isum[k], _mm512_add_epi32(_mm512_mullo_epi32(lo_sum[k], f_lo),
                                                             _mm512_mullo_epi32(hi_sum[k], f_hi)));
    };
    sub_block_pair.template operator()<0>();
    sub_block_pair.template operator()<1>();
    sub_block_pair.template operator()<2>();
    sub_block_pair.template operator()<3>();
    const __m512i m01 = min_pair<0>(s.m), m23 = min_pair<1>(s.m), m45 = min_pair<2>(s.m),
                  m67 = min_pair<3>(s.m);
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + L.d)));
    const __m512 dmin =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + L.dmin)));
    for (int k = 0; k < NT; ++k) {
      const int32_t* p = pairs[k] + 4 * b;
      __m512i csum = _mm512_dpwssd_epi32(_mm512_setzero_si512(), m01, _mm512_set1_epi32(p[0]));
      csum = _mm512_dpwssd_epi32(csum, m23, _mm512_set1_epi32(p[1]));
      csum = _mm512_dpwssd_epi32(csum, m45, _mm512_set1_epi32(p[2]));
      csum = _mm512_dpwssd_epi32(csum, m67, _mm512_set1_epi32(p[3]));
      acc[k] = kquant_fold_min16(acc[k], d, dmin, a[k][b].d, isum[k], csum);
    }
  }

  // A tile as a panel (kquant_panels_avx512.h).
  static void panel(KquantTile t, KquantPanelBlock& p) {
    const uint8_t* tile = t.tile;
    const auto quarter = [&]<int G>() {
      for (int c = 0; c < 8; ++c) {
        __m512i lo, hi;
        chunk_quants<L, G>(tile, c, lo, hi);
        _mm512_store_si512(p.quants[16 * G + c], lo);
        _mm512_store_si512(p.quants[16 * G + 8 + c], hi);
      }
    };
    quarter.template operator()<0>();
    quarter.template operator()<1>();
    quarter.template operator()<2>();
    quarter.template operator()<3>();
    const TileScales s = tile_scales(tile + L.scales);
    [&]<int... J>(std::integer_sequence<int, J...>) {
      (_mm512_store_si512(p.factors[J], lane_byte<J>(s.sc)), ...);
    }
    (std::make_integer_sequence<int, 8>{});
    [&]<int... Q>(std::integer_sequence<int, Q...>) {
      (_mm512_store_si512(p.coefs[Q], min_pair<Q>(s.m)), ...);
    }
    (std::make_integer_sequence<int, 4>{});
    _mm512_store_ps(
        p.d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + L.d))));
    _mm512_store_ps(
        p.dmin,
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + L.dmin))));
  }
};

}  // namespace

void matmul_rows_q4_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_tiles16<MinTiles<kQ4_K>>(task, r0, r1);
}

void matmul_rows_q5_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_tiles16<MinTiles<kQ5_K>>(task, r0, r1);
}

}  // namespace kvforge
