// IQ4_XS weights in the IQ4_XSTiles16 layout (matmul.h) x Q8_K activations,
// AVX-512 VNNI: as dot_q4_k_q5_k_tiles16_avx512.cpp does for Q4_K.
//
// 64 bytes of a tile hold 4 nibble bytes of each of 16 rows: the low
// nibbles index 4 levels of a sub-block of every row, the high nibbles the
// 4 levels 16 elements on. One vpshufb on a 16-entry table broadcast to all
// lanes turns the indices into the codebook's levels + 128 (unsigned, 1 ..
// 241, for vpdpbusd), so one vpdpbusd against a token's 4 quants broadcast
// adds 4 products to each row's lane. The + 128 adds 128 * A_s to sub-block
// s's sum (A_s: the token's quant sum over the sub-block, from the Q8_K
// block sums); each sum starts from -128 * A_s instead of 0, so after its 8
// vpdpbusd lane n holds row n's exact sub-block sum, which takes its factor
// ls - 32 with one multiply. Each (row, token) then gets the scalar
// kernel's integers (dot_iq4_xs.cpp) and its fold, in its order
// (kquant_accumulate_scaled): the same bits. Bounds: |sum| <= 32 * 241 * 128
// before the start value, so every int32 step is exact.
//
// The walk over groups and tokens, and the panels for long batches
// (kPanelIQ4_XS, as the native AVX-512 kernel's): kquant_tiles16_avx512.h.
#include <cstring>

#include "core/formats/iq4_codebook.h"
#include "core/formats/q8_k.h"
#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/kquant_tiles16_avx512.h"

namespace kvforge {
namespace {

// One tile ahead, as dot_q4_k_q5_k_tiles16_avx512.cpp says why.
constexpr int64_t kPrefetchBytes = kIQ4_XSTileBytes;

// The codebook's levels + 128 (formats/iq4_codebook.h) in every 128-bit
// lane, the bytes vpshufb looks up for a 4-bit index.
static inline __m512i level_table() {
  return _mm512_broadcast_i32x4(
      _mm_load_si128(reinterpret_cast<const __m128i*>(kIq4CodebookPlus128.v)));
}

// A tile's sub-block factors ls - 32 (formats/iq4_xs.h) of the 16 rows as
// signed bytes: byte i of lane n of even (odd) is row n's factor of
// sub-block 2i (2i + 1).
struct TileFactors {
  __m512i even, odd;
};

static inline TileFactors tile_factors(const uint8_t* tile) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
  // Lane n: scales_l of row n (nibble j is ls[j]'s low 4 bits) and its scales_h.
  const __m512i l = _mm512_loadu_si512(tile);
  const __m512i h = _mm512_cvtepu16_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kIQ4_XSTileScalesH)));
  // Nibble i of scales_h (bits 4 and 5 of ls[2i] and ls[2i + 1]) to byte i.
  const __m512i h8 =
      _mm512_and_si512(_mm512_or_si512(h, _mm512_slli_epi32(h, 8)), _mm512_set1_epi32(0x00ff00ff));
  const __m512i hb = _mm512_and_si512(_mm512_or_si512(h8, _mm512_slli_epi32(h8, 4)), low4);
  // Shifting a 32-bit lane moves bits across bytes; the masks keep each byte's own.
  const __m512i even =
      _mm512_or_si512(_mm512_and_si512(l, low4), _mm512_and_si512(_mm512_slli_epi32(hb, 4), top2));
  const __m512i odd = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(l, 4), low4),
                                      _mm512_and_si512(_mm512_slli_epi32(hb, 2), top2));
  const __m512i bias = _mm512_set1_epi8(32);
  return {_mm512_sub_epi8(even, bias), _mm512_sub_epi8(odd, bias)};
}

// Sub-block s's factor of the 16 rows as int32 lanes.
template <int S>
static inline __m512i factor(const TileFactors& f) {
  const __m512i v = S % 2 ? f.odd : f.even;
  return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * (S / 2)), 24);
}

// A token's -128 * A_s for its super-block's sub-blocks s < 8, the start
// value of each sub-block's sum (|A_s| <= 32 * 128: exact).
static inline void sub_block_starts(const BlockQ8_K& a, int32_t starts[8]) {
  for (int s = 0; s < 8; ++s) starts[s] = -128 * (a.bsums[2 * s] + a.bsums[2 * s + 1]);
}

// The levels + 128 of line c (c < 32) of a tile's nibbles: lo 4 of each
// row's sub-block c / 4 from element 4 (c % 4), hi the 4 from 16 on.
static inline void line_levels(const uint8_t* tile, int c, __m512i table, __m512i& lo,
                               __m512i& hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i w = _mm512_loadu_si512(tile + kIQ4_XSTileQs + 64 * c);
  lo = _mm512_shuffle_epi8(table, _mm512_and_si512(w, low4));
  hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(w, 4), low4));
}

// The IQ4_XS super-block math of kquant_tiles16_avx512.h's walk.
struct IQ4_XSTiles : KquantTilesShape<8, kPanelIQ4_XS, kIQ4_XSTileBytes, false, sub_block_starts> {
  // Super-block b for NT tokens: token k's 16 row sums added to acc[k].
  template <int NT>
  [[gnu::always_inline]] static void block(KquantTile t, const BlockQ8_K* const* a,
                                           const int32_t* const* starts, int64_t b, __m512* acc) {
    const uint8_t* tile = t.tile;
    const __m512i table = level_table();
    for (int64_t l = 0; l < kIQ4_XSTileQs; l += 64)
      _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + l), _MM_HINT_T0);
    const TileFactors f = tile_factors(tile);
    __m512i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm512_setzero_si512();
    const auto sub_block = [&]<int S>() {
      __m512i sum[NT];
      for (int k = 0; k < NT; ++k) sum[k] = _mm512_set1_epi32(starts[k][8 * b + S]);
      for (int c = 0; c < 4; ++c) {
        _mm_prefetch(
            reinterpret_cast<const char*>(tile + kPrefetchBytes + kIQ4_XSTileQs + 64 * (4 * S + c)),
            _MM_HINT_T0);
        __m512i lo, hi;
        line_levels(tile, 4 * S + c, table, lo, hi);
        for (int k = 0; k < NT; ++k) {
          int32_t q_lo, q_hi;
          std::memcpy(&q_lo, a[k][b].qs + 32 * S + 4 * c, 4);
          std::memcpy(&q_hi, a[k][b].qs + 32 * S + 16 + 4 * c, 4);
          sum[k] = _mm512_dpbusd_epi32(sum[k], lo, _mm512_set1_epi32(q_lo));
          sum[k] = _mm512_dpbusd_epi32(sum[k], hi, _mm512_set1_epi32(q_hi));
        }
      }
      const __m512i fs = factor<S>(f);
      for (int k = 0; k < NT; ++k)
        isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(sum[k], fs));
    };
    sub_block.template operator()<0>();
    sub_block.template operator()<1>();
    sub_block.template operator()<2>();
    sub_block.template operator()<3>();
    sub_block.template operator()<4>();
    sub_block.template operator()<5>();
    sub_block.template operator()<6>();
    sub_block.template operator()<7>();
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kIQ4_XSTileD)));
    for (int k = 0; k < NT; ++k) {
      __m512 scaled =
          _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(a[k][b].d)), _mm512_cvtepi32_ps(isum[k]));
      __asm__("" : "+v"(scaled));  // rounded here: never fused into the add
      acc[k] = _mm512_add_ps(acc[k], scaled);
    }
  }

  // A tile as a kPanelIQ4_XS panel: quants the levels + 128, factors ls - 32,
  // coefs the same factors as int16 pairs (the + 128's share).
  static void panel(KquantTile t, KquantPanelBlock& p) {
    const uint8_t* tile = t.tile;
    const __m512i table = level_table();
    for (int c = 0; c < 32; ++c) {
      __m512i lo, hi;
      line_levels(tile, c, table, lo, hi);
      _mm512_store_si512(p.quants[8 * (c / 4) + c % 4], lo);
      _mm512_store_si512(p.quants[8 * (c / 4) + 4 + c % 4], hi);
    }
    const TileFactors f = tile_factors(tile);
    const __m512i fs[8] = {factor<0>(f), factor<1>(f), factor<2>(f), factor<3>(f),
                           factor<4>(f), factor<5>(f), factor<6>(f), factor<7>(f)};
    for (int s = 0; s < 8; ++s) _mm512_store_si512(p.factors[s], fs[s]);
    for (int q = 0; q < 4; ++q)
      _mm512_store_si512(p.coefs[q],
                         _mm512_or_si512(_mm512_and_si512(fs[2 * q], _mm512_set1_epi32(0xffff)),
                                         _mm512_slli_epi32(fs[2 * q + 1], 16)));
    _mm512_store_ps(
        p.d,
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kIQ4_XSTileD))));
    _mm512_store_ps(p.dmin, _mm512_setzero_ps());
  }
};

}  // namespace

void matmul_rows_iq4_xs_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_tiles16<IQ4_XSTiles>(task, r0, r1);
}

}  // namespace kvforge
