// Q2_K weights in the Q2_KTiles16 layout (matmul.h) x Q8_K activations,
// AVX-512 VNNI: as dot_q4_k_q5_k_tiles16_avx512.cpp does for Q4_K.
//
// The native kernel (dot_q2_k_avx512.cpp) builds a product table per row
// and super-block and sums each row's lanes; for decode that work, not the
// memory stream, set the speed. Here a 64-byte line holds 4 qs bytes of
// each of 16 rows: byte j of row n's 4 is qs[32h + l], l = 16p + 4c + j,
// whose bit pair f is element 128h + 32f + l of sub-block 8h + 2f + p
// (formats/q2_k.h). Masking the line with 3 << 2f leaves 4 quants of each
// row, times 4^f, as vpdpbusd's unsigned bytes (<= 192): one instruction
// against the token's 4 quants broadcast adds 4 products into each row's
// lane, and no shift is needed. After the 4 lines of a (half, parity) pair,
// the 4 sums S'_j = 4^f S_j take sc[j] << (6 - 2f) in one multiply each, so
// their total is 64 x the scalar kernel's
//   isum = sum_j sc[j] * sum_{i in j} q_i * a_i       (|64 isum| < 2^27)
// exactly, and one arithmetic shift gives isum. The mins' term
//   msum = sum_j m[j] * bsums[j]
// is two vpdpbusd per scale line and token: the scale bytes masked with
// 0xf0 are m[j] << 4 (<= 240), and each bsums[j] = 256 hi + lo with int8 lo
// and hi (|bsums| <= 16 * 127, so |hi| <= 8), formed once per call, so
// 16 msum = 256 sum m hi + sum m lo, exact. Both meet the scalar kernel's
// fold in its order (kquant_fold_min16 = kquant_accumulate per lane): the
// same bits as the native layout.
//
// The walk over groups and tokens, and the panels for long batches:
// kquant_tiles16_avx512.h.
#include <cstring>

#include "core/formats/q8_k.h"
#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/kquant_tiles16_avx512.h"

namespace kvforge {
namespace {

// How far ahead of its loads a pass prefetches: decode streams the weights
// once, and the hardware prefetchers alone left it waiting on DRAM.
constexpr int64_t kPrefetchBytes = 2 * kQ2_KTileBytes;

// The multiplier of sub-block J's 4^f-scaled sums (J = 8h + 2f + p), lane
// n for row n: sc[J] << (6 - 2f), from scale line J / 4 (byte J % 4 of
// each lane, sc its low nibble).
template <int J>
static inline __m512i scale_multiplier(__m512i line) {
  constexpr int kUp = 6 - 2 * ((J % 8) / 2), kShift = 8 * (J % 4) - kUp;
  __m512i moved;
  if constexpr (kShift >= 0)
    moved = _mm512_srli_epi32(line, kShift);
  else
    moved = _mm512_slli_epi32(line, -kShift);
  return _mm512_and_si512(moved, _mm512_set1_epi32(0x0f << kUp));
}

// A token's block sums split for the mins' vpdpbusd: out[i] holds the int8
// low parts of bsums[4i .. 4i + 3], out[4 + i] their high parts, byte j for
// bsums[4i + j] = 256 hi + lo.
static inline void block_sum_bytes(const BlockQ8_K& a, int32_t out[8]) {
  for (int i = 0; i < 4; ++i) {
    uint32_t lo = 0, hi = 0;
    for (int j = 0; j < 4; ++j) {
      const int32_t s = a.bsums[4 * i + j];
      const int32_t low = int8_t(uint8_t(s & 0xff));
      lo |= uint32_t(uint8_t(low)) << (8 * j);
      hi |= uint32_t(uint8_t(int8_t((s - low) / 256))) << (8 * j);
    }
    out[i] = int32_t(lo);
    out[4 + i] = int32_t(hi);
  }
}

// The Q2_K super-block math of kquant_tiles16_avx512.h's walk.
struct Q2_KTiles : KquantTilesShape<8, kPanelQ2_K, kQ2_KTileBytes, false, block_sum_bytes> {
  // Super-block b for NT tokens: token k's 16 row sums added to acc[k].
  template <int NT>
  [[gnu::always_inline]] static void block(KquantTile t, const BlockQ8_K* const* a,
                                           const int32_t* const* pairs, int64_t b, __m512* acc) {
    const uint8_t* tile = t.tile;
    __m512i lines[4];
    for (int i = 0; i < 4; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + 64 * i), _MM_HINT_T0);
      lines[i] = _mm512_loadu_si512(tile + 64 * i);
    }
    __m512i isum64[NT];
    for (int k = 0; k < NT; ++k) isum64[k] = _mm512_setzero_si512();
    // Lines 8h + 4p .. 8h + 4p + 3: sub-blocks 8h + 2f + p, f < 4.
    const auto half_parity = [&]<int H, int P>() {
      __m512i sums[4][NT];
      for (int f = 0; f < 4; ++f)
        for (int k = 0; k < NT; ++k) sums[f][k] = _mm512_setzero_si512();
      for (int c = 0; c < 4; ++c) {
        const uint8_t* line = tile + kQ2_KTileQs + 64 * (8 * H + 4 * P + c);
        _mm_prefetch(reinterpret_cast<const char*>(line + kPrefetchBytes), _MM_HINT_T0);
        const __m512i w = _mm512_loadu_si512(line);
        for (int f = 0; f < 4; ++f) {
          const __m512i quants = _mm512_and_si512(w, _mm512_set1_epi8(char(3 << (2 * f))));
          for (int k = 0; k < NT; ++k) {
            int32_t quad;
            std::memcpy(&quad, a[k][b].qs + 128 * H + 32 * f + 16 * P + 4 * c, 4);
            sums[f][k] = _mm512_dpbusd_epi32(sums[f][k], quants, _mm512_set1_epi32(quad));
          }
        }
      }
      // Sub-block 8H + 2f + P's scale is byte (2f + P) % 4 of line 2H + (2f + P) / 4.
      const __m512i mult[4] = {scale_multiplier<8 * H + P>(lines[2 * H]),
                               scale_multiplier<8 * H + 2 + P>(lines[2 * H]),
                               scale_multiplier<8 * H + 4 + P>(lines[2 * H + 1]),
                               scale_multiplier<8 * H + 6 + P>(lines[2 * H + 1])};
      // f < 2: |S'| <= 4 * 16 * 3 * 127 and the multiplier's high half is
      // zero, so one vpdpwssd multiplies and adds exactly.
      for (int k = 0; k < NT; ++k) {
        isum64[k] = _mm512_dpwssd_epi32(isum64[k], sums[0][k], mult[0]);
        isum64[k] = _mm512_dpwssd_epi32(isum64[k], sums[1][k], mult[1]);
        isum64[k] =
            _mm512_add_epi32(isum64[k], _mm512_add_epi32(_mm512_mullo_epi32(sums[2][k], mult[2]),
                                                         _mm512_mullo_epi32(sums[3][k], mult[3])));
      }
    };
    half_parity.template operator()<0, 0>();
    half_parity.template operator()<0, 1>();
    half_parity.template operator()<1, 0>();
    half_parity.template operator()<1, 1>();
    fold_mins<NT>(tile, lines, a, pairs, b, isum64, acc);
  }

  // acc[k] += the super-block's 64 x isum (isum64) and the mins' term msum
  // (the scale lines' high nibbles against the block sum bytes), folded as
  // the scalar kernel does.
  template <int NT>
  [[gnu::always_inline]] static void fold_mins(const uint8_t* tile, const __m512i* lines,
                                               const BlockQ8_K* const* a,
                                               const int32_t* const* pairs, int64_t b,
                                               const __m512i* isum64, __m512* acc) {
    _mm_prefetch(reinterpret_cast<const char*>(tile + kPrefetchBytes + kQ2_KTileD), _MM_HINT_T0);
    __m512i mins[4];
    for (int i = 0; i < 4; ++i) mins[i] = _mm512_and_si512(lines[i], _mm512_set1_epi8(char(0xf0)));
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kQ2_KTileD)));
    const __m512 dmin =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kQ2_KTileDmin)));
    for (int k = 0; k < NT; ++k) {
      const int32_t* p = pairs[k] + 8 * b;
      __m512i high = _mm512_setzero_si512();
      for (int i = 0; i < 4; ++i)
        high = _mm512_dpbusd_epi32(high, mins[i], _mm512_set1_epi32(p[4 + i]));
      __m512i msum16 = _mm512_slli_epi32(high, 8);
      for (int i = 0; i < 4; ++i)
        msum16 = _mm512_dpbusd_epi32(msum16, mins[i], _mm512_set1_epi32(p[i]));
      acc[k] = kquant_fold_min16(acc[k], d, dmin, a[k][b].d, _mm512_srai_epi32(isum64[k], 6),
                                 _mm512_srai_epi32(msum16, 4));
    }
  }

  // A tile as a kPanelQ2_K panel (kquant_panels_avx512.h): the 2-bit levels,
  // factors sc[j], coefs the int16 pairs m[2q] | m[2q + 1] << 16.
  static void panel(KquantTile t, KquantPanelBlock& p) {
    const uint8_t* tile = t.tile;
    const __m512i low2 = _mm512_set1_epi8(0x03), low4 = _mm512_set1_epi32(0x0f);
    for (int k = 0; k < 16; ++k) {  // line k = 8h + 4p + c: column quads 32h + 8f + 4p + c
      const __m512i w = _mm512_loadu_si512(tile + kQ2_KTileQs + 64 * k);
      const int h = k / 8, pc = k % 8;
      _mm512_store_si512(p.quants[32 * h + pc], _mm512_and_si512(w, low2));
      _mm512_store_si512(p.quants[32 * h + 8 + pc],
                         _mm512_and_si512(_mm512_srli_epi16(w, 2), low2));
      _mm512_store_si512(p.quants[32 * h + 16 + pc],
                         _mm512_and_si512(_mm512_srli_epi16(w, 4), low2));
      _mm512_store_si512(p.quants[32 * h + 24 + pc],
                         _mm512_and_si512(_mm512_srli_epi16(w, 6), low2));
    }
    for (int i = 0; i < 4; ++i) {
      const __m512i v = _mm512_loadu_si512(tile + 64 * i);
      for (int s = 0; s < 4; ++s)
        _mm512_store_si512(p.factors[4 * i + s],
                           _mm512_and_si512(_mm512_srli_epi32(v, 8 * s), low4));
      // m[4i + 2u] | m[4i + 2u + 1] << 16: the high nibbles of bytes 2u, 2u + 1.
      for (int u = 0; u < 2; ++u) {
        const __m512i pair = _mm512_srli_epi32(v, 16 * u);
        _mm512_store_si512(p.coefs[2 * i + u],
                           _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(pair, 4), low4),
                                           _mm512_and_si512(_mm512_slli_epi32(pair, 4),
                                                            _mm512_set1_epi32(0xf0000))));
      }
    }
    _mm512_store_ps(
        p.d,
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kQ2_KTileD))));
    _mm512_store_ps(p.dmin, _mm512_cvtph_ps(_mm256_loadu_si256(
                                reinterpret_cast<const __m256i*>(tile + kQ2_KTileDmin))));
  }
};

}  // namespace

void matmul_rows_q2_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_tiles16<Q2_KTiles>(task, r0, r1);
}

}  // namespace kvforge
