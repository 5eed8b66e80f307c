// AVX-512 VNNI dot products for weights in 32-element blocks with an f16
// scale at the start of each block (Q8_0, Q4_0) against Q8 activations in
// the quad layout (matmul_task.h); for dot_q8_0_avx512.cpp and
// dot_q4_0_avx512.cpp only.
//
// Four blocks per step ("quad"). The weights of a quad are arranged like the
// activations: `lo` holds elements 0..15 of block i in bytes 16i..16i+15,
// `hi` elements 16..31. One vpdpbusd per half then leaves block i's partial
// sums in lanes 4i..4i+3, so a single f32 convert, multiply (dw*da per lane)
// and FMA per 4 blocks applies the scales: half the float work per value of
// a layout with 2 blocks per register, which bounded the 4 x 4 tiles.
//
// vpdpbusd multiplies unsigned by signed bytes: the weights go in as the
// unsigned operand, offset by +kOffset (Q8_0: w + 128 = w ^ 0x80; Q4_0: the
// nibble itself, w + 8), the signed activations as they are. Then
// sum(u*a) = sum(w*a) + kOffset*sum(a), and the correction -kOffset*sum(a)
// comes from the activation lane sums: it seeds every row's accumulator of
// that token, so the integer result per lane is exact.
//
// Register tiles (register_tile_loop.h): NR rows x NT tokens per step. The
// NR rows' weights and scales are loaded once per quad and used for NT
// tokens; each token's quants, scales and correction once and used for NR
// rows. Per (row, token) the operations are those of a 1 x 1 tile in the same
// order, so a result does not depend on the tile shape.
#pragma once

#include "core/kernels/avx512_helpers.h"
#include "core/kernels/register_tile_loop.h"

namespace kvforge {
namespace {

// Tile shape: 4 rows x 3 tokens = 12 accumulators, 12 vectors of row data
// (lo, hi, dw), a token's 4 vectors and temporaries fit the 32 zmm registers;
// a 4 x 4 tile would spill accumulators (docs/bench/design-measurements.md
// compares the shapes).
inline constexpr int kQ8RowTile = 4;
inline constexpr int kQ8TokenTile = 3;

// A quad of weights as vpdpbusd operands: lo/hi unsigned bytes (see above),
// dw the f32 scale of block l/4 in lane l.
struct WeightQuad {
  __m512i lo, hi;
  __m512 dw;
};

// One token's Q8 activations of a tile: quants, scales and lane sums (matmul_task.h).
template <int NT>
struct TokenQuads {
  const int8_t* a[NT];
  const float* da[NT];
  const int32_t* sa[NT];

  TokenQuads(const MatmulTask& task, int64_t t0, int64_t quads) {
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_quants + (t0 + k) * quads * kQ8QuadBytes;
      da[k] = task.act_scales + (t0 + k) * quads * kQ8QuadLanes;
      sa[k] = task.act_sums + (t0 + k) * quads * kQ8QuadLanes;
    }
  }

  // acc[r][k] += the quad q of weight row r times token k, for the NR x NT
  // tile; kOffsetShift: the weights' unsigned offset (see the top).
  template <int kOffsetShift, int NR>
  void accumulate(const WeightQuad (&wq)[NR], int64_t q, __m512 (&acc)[NR][NT]) const {
    for (int k = 0; k < NT; ++k) {
      const __m512i alo = _mm512_loadu_si512(a[k] + q * kQ8QuadBytes);
      const __m512i ahi = _mm512_loadu_si512(a[k] + q * kQ8QuadBytes + 64);
      const __m512 dak = _mm512_loadu_ps(da[k] + q * kQ8QuadLanes);
      const __m512i correction = _mm512_sub_epi32(
          _mm512_setzero_si512(),
          _mm512_slli_epi32(_mm512_loadu_si512(sa[k] + q * kQ8QuadLanes), kOffsetShift));
      for (int r = 0; r < NR; ++r) {
        const __m512i isum =
            _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(correction, wq[r].lo, alo), wq[r].hi, ahi);
        acc[r][k] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(wq[r].dw, dak), acc[r][k]);
      }
    }
  }
};

template <int NR, int NT>
void zero_tile(__m512 (&acc)[NR][NT]) {
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NT; ++k) acc[r][k] = _mm512_setzero_ps();
}

template <int NR, int NT>
void store_tile(const __m512 (&acc)[NR][NT], float* out) {
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NT; ++k) out[r * NT + k] = avx512_hsum(acc[r][k]);
}

// WeightBlocks: kBlockBytes; kOffsetShift (kOffset = 1 << kOffsetShift);
// WeightQuad load_quad(const uint8_t* blk): the 4 blocks from blk on, all
// bytes of which are readable (the last quad of a row is copied into a
// zero-padded buffer first when the row has fewer blocks).
template <class WeightBlocks>
struct Avx512Q8BlockDot {
  const MatmulTask& task;

  static constexpr int64_t kQuadBytes = 4 * WeightBlocks::kBlockBytes;

  // The last, partial quad of a row: its blocks then zeros. Zero weights
  // contribute nothing (their activations are zero too: the padding blocks of
  // the quad layout), whatever the offset.
  static WeightQuad load_partial_quad(const uint8_t* blk, int64_t n_blocks) {
    alignas(64) uint8_t buf[kQuadBytes + 64] = {};
    std::memcpy(buf, blk, size_t(n_blocks * WeightBlocks::kBlockBytes));
    return WeightBlocks::load_quad(buf);
  }

  template <int NR, int NT>
  void tile(int64_t row, int64_t row_step, int64_t t0, float* out) const {
    const int64_t n_blocks = task.cols / 32;
    const int64_t full_quads = n_blocks / 4, quads = (n_blocks + 3) / 4;
    const uint8_t* w[NR];
    for (int r = 0; r < NR; ++r)
      w[r] = task.weights + (row + r * row_step) * int64_t(task.row_bytes);
    const TokenQuads<NT> tokens(task, t0, quads);
    __m512 acc[NR][NT];
    zero_tile(acc);
    for (int64_t q = 0; q < quads; ++q) {
      WeightQuad wq[NR];
      for (int r = 0; r < NR; ++r) {
        const uint8_t* blk = w[r] + q * kQuadBytes;
        wq[r] = q < full_quads ? WeightBlocks::load_quad(blk)
                               : load_partial_quad(blk, n_blocks - 4 * q);
      }
      tokens.template accumulate<WeightBlocks::kOffsetShift>(wq, q, acc);
    }
    store_tile(acc, out);
  }
};

// Rows regrouped at load (WeightLayout *Groups8, weight_repack.h): per 8
// blocks, 16 bytes of f16 scales, then the two quads' weights ready for
// vpdpbusd (Grouped::quad loads them). The group's 8 scales are converted
// once and each quad's 4 spread over their lanes by one permute. Every
// (row, token) meets the same values and instructions in the same order as
// with Avx512Q8BlockDot on the native rows: the same bits. Rows hold whole
// groups (cols a multiple of 256), so there is no partial quad.
//
// Grouped: kGroupBytes; kOffsetShift; void quad(const uint8_t* quads, int j,
// WeightQuad& wq) filling lo and hi of quad j from the bytes after the scales.
template <class Grouped>
struct Avx512Q8GroupDot {
  const MatmulTask& task;

  static constexpr int64_t kScaleBytes = 8 * sizeof(uint16_t);

  template <int NR, int NT>
  void tile(int64_t row, int64_t row_step, int64_t t0, float* out) const {
    const int64_t groups = task.cols / 256;
    const uint8_t* w[NR];
    for (int r = 0; r < NR; ++r)
      w[r] = task.weights + (row + r * row_step) * int64_t(task.row_bytes);
    const TokenQuads<NT> tokens(task, t0, 2 * groups);
    __m512 acc[NR][NT];
    zero_tile(acc);
    const __m512i spread[2] = {_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                               _mm512_set_epi32(7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4)};
    for (int64_t g = 0; g < groups; ++g) {
      __m512 scales[NR];  // lanes 0..7: the group's 8 scales
      for (int r = 0; r < NR; ++r)
        scales[r] = _mm512_castps256_ps512(_mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[r] + g * Grouped::kGroupBytes))));
      for (int j = 0; j < 2; ++j) {
        WeightQuad wq[NR];
        for (int r = 0; r < NR; ++r) {
          Grouped::quad(w[r] + g * Grouped::kGroupBytes + kScaleBytes, j, wq[r]);
          wq[r].dw = _mm512_permutexvar_ps(spread[j], scales[r]);
        }
        tokens.template accumulate<Grouped::kOffsetShift>(wq, 2 * g + j, acc);
      }
    }
    store_tile(acc, out);
  }
};

}  // namespace
}  // namespace kvforge
