// Batched matmuls of K-quant (Q2_K .. Q6_K) and IQ4_XS weights on 16-row
// panels decoded to bytes once per call, for their *_avx512.cpp kernels.
//
// The row tiles (tile_loop.h) unpack a super-block once per tile of at most
// 8 tokens and leave each (row, token) product spread over vector lanes that
// must then be summed. For a batch of many tokens, a panel of 16 consecutive
// rows is instead decoded once into bytes, 16 rows interleaved by 4 columns
// (llama.cpp's repacked layouts follow the same idea), so one vpdpbusd
// multiplies 4 columns of all 16 rows by one token's 4 quants broadcast and
// lane n holds row n: no lane sums, and the unpacking is shared by every
// token of the batch.
//
// Per (row, token, super-block) the panel kernel forms the exact integers
//   isum = sum_j factors[j] * sum_{i in sub-block j} quants_i * a_i
//   csum = sum_j coefs[j] * A_j     (A_j: the token's quant sum over sub-block j)
// and folds them as the type's scalar kernel does (kquant_accumulate.h), as
// its PanelKind says:
//   a min term (Q2_K, Q4_K, Q5_K):
//     acc = (acc + (d * da) * isum) - (dmin * da) * csum
//   an offset (levels stored + 4 for Q3_K, + 32 for Q6_K, + 128 for IQ4_XS,
//   so isum carries the offset times sum_j factors[j] * A_j, which
//   coefs = factors take back out):
//     isum -= offset * csum, then the type's fold (Q6_K's kquant_accumulate
//     with dmin = 0, Q3_K's and IQ4_XS's scaled one).
// Same integers, same f32 operations in the same order: the scalar kernel's
// bits, so a row gets the same result in a panel or in a row tile.
//
// `static`: each including file gets its own copy (see avx512_helpers.h).
#pragma once

#include <cstdint>

#include "core/formats/q4_k.h"
#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/matmul_task.h"
#include "core/kernels/thread_scratch.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

inline constexpr int kPanelRows = 16;
// Batches smaller than this run the row tiles: decoding a panel costs about
// as much as a few tokens' products over it.
inline constexpr int64_t kPanelMinTokens = 32;

// How a type's panel is folded (see the top).
struct PanelKind {
  int sub_block;     // elements per sub-block: 32 or 16
  int offset_shift;  // isum -= csum << offset_shift; < 0: csum is the min term
  bool min_fold;     // kquant_accumulate's fold (else kquant_accumulate_scaled's)
};
inline constexpr PanelKind kPanelWithMin{32, -1, true};  // Q4_K, Q5_K
inline constexpr PanelKind kPanelQ2_K{16, -1, true};
inline constexpr PanelKind kPanelQ3_K{16, 2, false};    // levels + 4
inline constexpr PanelKind kPanelQ6_K{16, 5, true};     // levels + 32, dmin = 0
inline constexpr PanelKind kPanelIQ4_XS{32, 7, false};  // levels + 128

// One super-block of one panel (at most 16 sub-blocks).
struct alignas(64) KquantPanelBlock {
  uint8_t quants[64][kPanelRows][4];  // [column quad][row][column in quad]
  int32_t factors[16][kPanelRows];    // sub-block j's integer scale
  int32_t coefs[8][kPanelRows];       // int16 pairs: coef of sub-block 2p | 2p+1 << 16
  float d[kPanelRows];
  float dmin[kPanelRows];
};

// One row's super-block as the decoder leaves it before the interleave.
struct KquantPanelRow {
  alignas(64) uint8_t quants[256];  // element order
  int32_t factors[16];
  int32_t coefs[16];
  float d, dmin;
};

// The scale part of a Q4_K or Q5_K row's panel entry: factors sc[j], coefs
// m[j] from the 12 packed scale bytes, and the super-scales.
static inline void kquant_panel_row_q4_k_scales(const uint8_t* scales, uint16_t d, uint16_t dmin,
                                                KquantPanelRow& out) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4_k_scale_min(scales, j, sc, m);
    out.factors[j] = sc;
    out.coefs[j] = m;
  }
  out.d = _cvtsh_ss(d);
  out.dmin = _cvtsh_ss(dmin);
}

// A panel row's scales for types without a min, whose sub-block factors
// and coefs are the same signed numbers scale(j) (the coefs taking an
// offset in the levels back out); d the block's IEEE half.
template <int kSubBlocks, class Scale>
static inline void kquant_panel_row_signed_scales(uint16_t d, Scale&& scale, KquantPanelRow& out) {
  for (int j = 0; j < kSubBlocks; ++j) out.factors[j] = out.coefs[j] = scale(j);
  out.d = _cvtsh_ss(d);
  out.dmin = 0.0f;
}

// Moves 16 decoded rows into panel block p (rows[r] is panel row r) for
// sub-blocks of `sub_block` elements.
static inline void kquant_panel_interleave(const KquantPanelRow* rows, int sub_block,
                                           KquantPanelBlock& p) {
  const int n_sub = 256 / sub_block;
  const __m512i row_offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(sizeof(KquantPanelRow))));
  for (int c = 0; c < 64; ++c) {
    _mm512_store_si512(p.quants[c], _mm512_i32gather_epi32(row_offsets, rows[0].quants + 4 * c, 1));
  }
  for (int r = 0; r < kPanelRows; ++r) {
    for (int j = 0; j < n_sub; ++j) p.factors[j][r] = rows[r].factors[j];
    for (int q = 0; q < n_sub / 2; ++q) {
      p.coefs[q][r] = int32_t(uint32_t(uint16_t(rows[r].coefs[2 * q])) |
                              uint32_t(uint16_t(rows[r].coefs[2 * q + 1])) << 16);
    }
    p.d[r] = rows[r].d;
    p.dmin[r] = rows[r].dmin;
  }
}

// csum lanes for one token: sum_j coefs[j] * A_j, the A_j as int16 pairs
// (|A_j| <= 32 * 127, so packing them is exact). Sub-blocks of 16 take
// Q8_K's bsums as they are stored.
template <PanelKind K>
static inline __m512i kquant_panel_csum(const KquantPanelBlock& p, const BlockQ8_K& a) {
  __m512i csum = _mm512_setzero_si512();
  if constexpr (K.sub_block == 16) {
    for (int q = 0; q < 8; ++q) {
      int32_t pair;
      std::memcpy(&pair, a.bsums + 2 * q, 4);
      csum = _mm512_dpwssd_epi32(csum, _mm512_load_si512(p.coefs[q]), _mm512_set1_epi32(pair));
    }
  } else {
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums));
    const __m256i sums = _mm256_madd_epi16(bsums, _mm256_set1_epi16(1));  // A_0 .. A_7
    const __m256i packed = _mm256_packs_epi32(sums, sums);  // per 128-bit lane: 4 pairs twice
    const int32_t pairs[4] = {_mm256_extract_epi32(packed, 0), _mm256_extract_epi32(packed, 1),
                              _mm256_extract_epi32(packed, 4), _mm256_extract_epi32(packed, 5)};
    for (int q = 0; q < 4; ++q) {
      csum = _mm512_dpwssd_epi32(csum, _mm512_load_si512(p.coefs[q]), _mm512_set1_epi32(pairs[q]));
    }
  }
  return csum;
}

// acc = (acc + (d * da) * isum) - (dmin * da) * csum for 16 rows, rounded
// step by step as kquant_accumulate does.
static inline __m512 kquant_fold_min16(__m512 acc, __m512 d, __m512 dmin, float da, __m512i isum,
                                       __m512i csum) {
  const __m512 da16 = _mm512_set1_ps(da);
  __m512 scaled = _mm512_mul_ps(_mm512_mul_ps(d, da16), _mm512_cvtepi32_ps(isum));
  __asm__("" : "+v"(scaled));  // rounded here: never fused into the add
  acc = _mm512_add_ps(acc, scaled);
  __m512 offset = _mm512_mul_ps(_mm512_mul_ps(dmin, da16), _mm512_cvtepi32_ps(csum));
  __asm__("" : "+v"(offset));
  return _mm512_sub_ps(acc, offset);
}

// The fold of one super-block into one token's 16 row sums (see the top).
template <PanelKind K>
static inline __m512 kquant_panel_fold(const KquantPanelBlock& p, const BlockQ8_K& a, __m512i isum,
                                       __m512 acc) {
  __m512i csum = kquant_panel_csum<K>(p, a);
  if constexpr (K.offset_shift >= 0) {
    isum = _mm512_sub_epi32(isum, _mm512_slli_epi32(csum, K.offset_shift));
    csum = _mm512_setzero_si512();
  }
  if constexpr (K.min_fold) {
    return kquant_fold_min16(acc, _mm512_load_ps(p.d), _mm512_load_ps(p.dmin), a.d, isum, csum);
  } else {
    __m512 scaled = _mm512_mul_ps(_mm512_mul_ps(_mm512_load_ps(p.d), _mm512_set1_ps(a.d)),
                                  _mm512_cvtepi32_ps(isum));
    __asm__("" : "+v"(scaled));  // rounded here: never fused into the add
    return _mm512_add_ps(acc, scaled);
  }
}

// Tokens t0 .. t0 + NT - 1 over a decoded panel of n_sb super-blocks; row
// sums to y (token k's 16 rows at y[k * rows]).
template <int NT, PanelKind K>
static void kquant_panel_tile(const KquantPanelBlock* panel, int64_t n_sb, const MatmulTask& task,
                              int64_t t0, float* y) {
  const BlockQ8_K* a[NT];
  q8_k_token_rows<NT>(task, t0, n_sb, a);
  __m512 acc[NT];
  for (int k = 0; k < NT; ++k) acc[k] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_sb; ++b) {
    const KquantPanelBlock& p = panel[b];
    __m512i isum[NT];
    for (int k = 0; k < NT; ++k) isum[k] = _mm512_setzero_si512();
    constexpr int kQuads = K.sub_block / 4;  // column quads per sub-block
    for (int j = 0; j < 256 / K.sub_block; ++j) {
      __m512i sub[NT];
      for (int k = 0; k < NT; ++k) sub[k] = _mm512_setzero_si512();
      for (int c = 0; c < kQuads; ++c) {
        const __m512i w = _mm512_load_si512(p.quants[kQuads * j + c]);
        for (int k = 0; k < NT; ++k) {
          int32_t quad;
          std::memcpy(&quad, a[k][b].qs + K.sub_block * j + 4 * c, 4);
          sub[k] = _mm512_dpbusd_epi32(sub[k], w, _mm512_set1_epi32(quad));
        }
      }
      const __m512i f = _mm512_load_si512(p.factors[j]);
      for (int k = 0; k < NT; ++k)
        isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(sub[k], f));
    }
    for (int k = 0; k < NT; ++k) acc[k] = kquant_panel_fold<K>(p, a[k][b], isum[k], acc[k]);
  }
  for (int k = 0; k < NT; ++k) _mm512_storeu_ps(y + k * task.rows, acc[k]);
}

inline constexpr int kPanelTokens = 8;

// Every token over one decoded panel whose first row is row0.
template <PanelKind K>
static void kquant_panel_tokens(const KquantPanelBlock* panel, const MatmulTask& task,
                                int64_t row0) {
  const int64_t n_sb = task.cols / 256;
  for (int64_t t0 = 0; t0 < task.n_tokens; t0 += kPanelTokens) {
    float* y = task.y + t0 * task.rows + row0;
    switch (task.n_tokens - t0 < kPanelTokens ? int(task.n_tokens - t0) : kPanelTokens) {
      case 1:
        kquant_panel_tile<1, K>(panel, n_sb, task, t0, y);
        break;
      case 2:
        kquant_panel_tile<2, K>(panel, n_sb, task, t0, y);
        break;
      case 3:
        kquant_panel_tile<3, K>(panel, n_sb, task, t0, y);
        break;
      case 4:
        kquant_panel_tile<4, K>(panel, n_sb, task, t0, y);
        break;
      case 5:
        kquant_panel_tile<5, K>(panel, n_sb, task, t0, y);
        break;
      case 6:
        kquant_panel_tile<6, K>(panel, n_sb, task, t0, y);
        break;
      case 7:
        kquant_panel_tile<7, K>(panel, n_sb, task, t0, y);
        break;
      default:
        kquant_panel_tile<8, K>(panel, n_sb, task, t0, y);
        break;
    }
  }
}

// Whether a batch runs on panels: kPanelMinTokens or more tokens, whole super-blocks.
static inline bool kquant_panels_pay(const MatmulTask& task) {
  return task.n_tokens >= kPanelMinTokens && task.cols % 256 == 0;
}

// Every token over the panels whose first rows are row0, row0 + 16, ... <
// row_end; decode_panel(row0, b, panel, rows) fills super-block b of the
// panel whose first row is row0 (rows: room for 16 decoded rows).
template <PanelKind K, class DecodePanel>
static void run_kquant_panel_rows(const MatmulTask& task, int64_t row0, int64_t row_end,
                                  DecodePanel&& decode_panel) {
  const int64_t n_sb = task.cols / 256;
  auto* panel = reinterpret_cast<KquantPanelBlock*>(
      thread_scratch(size_t(n_sb) * sizeof(KquantPanelBlock) + sizeof(KquantPanelRow[kPanelRows])));
  auto* rows = reinterpret_cast<KquantPanelRow*>(panel + n_sb);
  for (; row0 < row_end; row0 += kPanelRows) {
    for (int64_t b = 0; b < n_sb; ++b) decode_panel(row0, b, panel[b], rows);
    kquant_panel_tokens<K>(panel, task, row0);
  }
}

// Rows [r0, r1) in whole panels, for batches where kquant_panels_pay;
// decode_row(row, b, out) fills one row's super-block b. Returns the first
// row left to the row tiles (r0 for small batches, else the < 16 rows after
// the last whole panel).
template <PanelKind K, class DecodeRow>
static int64_t run_kquant_panels(const MatmulTask& task, int64_t r0, int64_t r1,
                                 DecodeRow&& decode_row) {
  if (!kquant_panels_pay(task)) return r0;
  const int64_t end = r0 + (r1 - r0) / kPanelRows * kPanelRows;
  run_kquant_panel_rows<K>(task, r0, end,
                           [&](int64_t row0, int64_t b, KquantPanelBlock& p, KquantPanelRow* rows) {
                             for (int r = 0; r < kPanelRows; ++r) decode_row(row0 + r, b, rows[r]);
                             kquant_panel_interleave(rows, K.sub_block, p);
                           });
  return end;
}

// A native K-quant kernel's rows [r0, r1): whole panels for batches where
// kquant_panels_pay, decode_row(task, row, b, out) filling one row's
// super-block b, and the rows left in row tiles of up to 8 tokens (dot, as
// run_row_tiles takes it).
template <PanelKind K, auto decode_row, class Dot>
static void run_kquant_rows_avx512(const MatmulTask& task, int64_t r0, int64_t r1, const Dot& dot) {
  const int64_t rest = run_kquant_panels<K>(
      task, r0, r1,
      [&](int64_t row, int64_t b, KquantPanelRow& out) { decode_row(task, row, b, out); });
  run_row_tiles<8>(task, rest, r1, dot);
}

}  // namespace kvforge
