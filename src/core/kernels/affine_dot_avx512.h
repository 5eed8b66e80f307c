// Q4_1 / Q5_1 weights x Q8-blocks activations, AVX-512 VNNI; for
// dot_q4_1_avx512.cpp and dot_q5_1_avx512.cpp only.
//
// Sixteen blocks (a "group") per step, one register of block terms folded as
// affine_fold.h defines, so results match the scalar kernel bit for bit.
//
// The exact block sums come from 8 vpdpbusd per group: the unsigned levels
// are vpdpbusd's unsigned operand as they are, the activation quants its
// signed one. A block's 32 products land in 2 int32 lanes, so 8 blocks share
// a register and one unpack-and-add per group leaves each block's sum in a
// lane of its own. For that the group is taken as 4 quads of 4 blocks (quad
// j = blocks 4j..4j+3) and 2 pairs of quads, p = 0: quads 0 and 2, p = 1:
// quads 1 and 3. In pair p with quads qa, qb, part u = 0..3 covers elements
// 8u..8u+7 of every block; its int32 lanes, per 128-bit lane i:
//     lane 4i + 0: elements 8u..8u+3   of block i of qa
//     lane 4i + 1: elements 8u..8u+3   of block i of qb
//     lane 4i + 2: elements 8u+4..8u+7 of block i of qa
//     lane 4i + 3: elements 8u+4..8u+7 of block i of qb
// (the weights are unpacked this way from their nibble bytes, the
// activations by two shuffles per 128 bytes and an unpack). Summing the 4
// parts, then unpacklo + unpackhi of the two pairs' sums, leaves block
// 4j + i's sum in lane 4i + j: the "transposed" order. Steps, offsets and
// activation scales are arranged in that order too, and each accumulator is
// permuted to block order once, before its final reduction.
//
// A row's last group of at most 8 blocks (cols = 768 = 16 + 8 blocks, say)
// takes quads 0 and 1 as its one pair (kPairs = 1): 4 vpdpbusd, and the
// pair's sum plus itself with lanes 4i+2, 4i+3 swapped onto 4i, 4i+1 puts
// block i in lane 4i and block 4 + i in lane 4i + 1, the same transposed
// lanes; the other lanes, and any of a partial group past its blocks, are
// masked out of the accumulators.
//
// The activations are arranged once per call (per L2-sized block of tokens)
// into per-thread scratch; register tiles (register_tile_loop.h) then unpack
// each row's group once per tile for NT tokens. Per (row, token) the
// operations are those of a 1 x 1 tile in the same order.
#pragma once

#include "core/kernels/affine_fold.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/register_tile_loop.h"
#include "core/kernels/thread_scratch.h"

namespace kvforge {
namespace {

// Tile shape for batches (decode uses register_tile_loop's 4 x 2): 12
// accumulators, a row's 10 unpacked vectors and temporaries fit 32 zmm.
inline constexpr int kAffineRowTile = 4;
inline constexpr int kAffineTokenTile = 3;

// Pins a vector product to a register (see affine_fold.h).
static inline __m512 avx512_unfused(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// Loads of 64, 32 and 16 bytes at p of which only the first `avail` may be
// read (kPartial: the row's last, partial group), zeros after them; masked
// loads do not fault on the bytes they skip.
static inline __mmask64 affine_byte_mask(int64_t avail) {
  return avail >= 64 ? ~__mmask64(0) : avail <= 0 ? __mmask64(0) : (__mmask64(1) << avail) - 1;
}
template <bool kPartial>
static inline __m512i affine_load64(const uint8_t* p, int64_t avail) {
  if constexpr (kPartial) return _mm512_maskz_loadu_epi8(affine_byte_mask(avail), p);
  return _mm512_loadu_si512(p);
}
template <bool kPartial>
static inline __m256i affine_load32(const uint8_t* p, int64_t avail) {
  if constexpr (kPartial) return _mm256_maskz_loadu_epi8(__mmask32(affine_byte_mask(avail)), p);
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
template <bool kPartial>
static inline __m128i affine_load16(const uint8_t* p, int64_t avail) {
  if constexpr (kPartial) return _mm_maskz_loadu_epi8(__mmask16(affine_byte_mask(avail)), p);
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Lane l of the transposed order holds block 4 (l % 4) + l / 4; the same
// permutation takes block order to transposed order and back.
static inline __m512i affine_transpose16() {
  return _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
}

// One row's group: vpdpbusd operands w[p][u] (see the top; only w[0] for
// kPairs = 1), steps and offsets as f32 in the transposed order.
struct AffineWeightGroup {
  __m512i w[2][4];
  __m512 dw, mw;
};

// One token's group: the quants arranged like the weights, scales and block
// sums in the transposed order.
struct AffineTokenGroup {
  __m512i a[2][4];
  __m512 da, sa;
};

// The lanes of the transposed order holding blocks 0..n-1.
struct AffineLaneMasks {
  uint16_t of[17];
};
constexpr AffineLaneMasks affine_lane_masks() {
  AffineLaneMasks m{};
  for (int n = 1; n <= 16; ++n)
    m.of[n] = uint16_t(m.of[n - 1] | 1u << (4 * ((n - 1) % 4) + (n - 1) / 4));
  return m;
}
inline constexpr AffineLaneMasks kAffineValidLanes = affine_lane_masks();

// a: the group's quants in block order, n blocks of 32 (kPartial: n < 16,
// nothing past them is read); their scales and block sums at da, sa.
template <bool kPartial, int kPairs>
static inline void arrange_token_group(const int8_t* a, const float* da, const float* sa, int n,
                                       AffineTokenGroup& out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(a);
  __m512i lo[4], hi[4];  // quad j: lane i = elements 0-15 (lo), 16-31 (hi) of block 4j + i
  for (int j = 0; j < 2 * kPairs; ++j) {
    const __m512i a0 = affine_load64<kPartial>(bytes + 128 * j, 32 * n - 128 * j);
    const __m512i a1 = affine_load64<kPartial>(bytes + 128 * j + 64, 32 * n - 128 * j - 64);
    lo[j] = _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
    hi[j] = _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
  }
  for (int p = 0; p < kPairs; ++p) {
    out.a[p][0] = _mm512_unpacklo_epi32(lo[p], lo[p + kPairs]);
    out.a[p][1] = _mm512_unpackhi_epi32(lo[p], lo[p + kPairs]);
    out.a[p][2] = _mm512_unpacklo_epi32(hi[p], hi[p + kPairs]);
    out.a[p][3] = _mm512_unpackhi_epi32(hi[p], hi[p + kPairs]);
  }
  const __mmask16 valid = __mmask16((1u << n) - 1);
  const __m512i transpose = affine_transpose16();
  out.da = _mm512_permutexvar_ps(transpose, _mm512_maskz_loadu_ps(valid, da));
  out.sa = _mm512_permutexvar_ps(transpose, _mm512_maskz_loadu_ps(valid, sa));
}

// The block terms of one row and one token, in the transposed order (for
// kPairs = 1 only lanes 4i and 4i + 1 are blocks).
template <int kPairs>
static inline __m512 affine_group_terms(const AffineWeightGroup& wg, const AffineTokenGroup& tg) {
  __m512i sums[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wg.w[p][0], tg.a[p][0]);
    for (int u = 1; u < 4; ++u) s = _mm512_dpbusd_epi32(s, wg.w[p][u], tg.a[p][u]);
    sums[p] = s;
  }
  __m512i isum;
  if constexpr (kPairs == 2) {
    isum = _mm512_add_epi32(_mm512_unpacklo_epi32(sums[0], sums[1]),
                            _mm512_unpackhi_epi32(sums[0], sums[1]));
  } else {
    isum = _mm512_add_epi32(sums[0], _mm512_shuffle_epi32(sums[0], _MM_PERM_BADC));
  }
  const __m512 scaled =
      avx512_unfused(_mm512_mul_ps(_mm512_mul_ps(wg.dw, tg.da), _mm512_cvtepi32_ps(isum)));
  const __m512 offset = avx512_unfused(_mm512_mul_ps(wg.mw, tg.sa));
  return _mm512_add_ps(scaled, offset);
}

// Blocks: kBlockBytes and
//   template <bool kPartial, int kPairs>
//   static AffineWeightGroup load_group(const uint8_t* blk, int64_t avail)
// unpacking the 16 blocks from blk on (pair p: quads p and p + kPairs), of
// whose bytes only the first avail may be read when kPartial (the rest are
// zero blocks), with the loads above.
//
// tokens: the call's tokens arranged, [n_tokens][groups] (affine_matmul_avx512).
template <class Blocks>
struct AffineAvx512Dot {
  static constexpr int64_t kGroupBytes = 16 * Blocks::kBlockBytes;
  const MatmulTask& task;
  const AffineTokenGroup* tokens;
  int64_t groups;

  // acc[r][k] += group g of row w[r] times token k (token[k * groups + g]).
  template <bool kPartial, int kPairs, int NR, int NT>
  void fold_group(const uint8_t* const (&w)[NR], const AffineTokenGroup* token, int64_t g, int n,
                  __m512 (&acc)[NR][NT]) const {
    const __mmask16 valid = kAffineValidLanes.of[n];
    // Unrolled, so that the accumulators stay in registers (GCC keeps a loop
    // this large rolled and indexes acc in memory otherwise).
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const AffineWeightGroup wg = Blocks::template load_group<kPartial, kPairs>(
          w[r] + g * kGroupBytes, n * Blocks::kBlockBytes);
#pragma GCC unroll 4
      for (int k = 0; k < NT; ++k)
        acc[r][k] = _mm512_mask_add_ps(acc[r][k], valid, acc[r][k],
                                       affine_group_terms<kPairs>(wg, token[k * groups + g]));
    }
  }

  template <int NR, int NT>
  void tile(int64_t row, int64_t row_step, int64_t t0, float* out) const {
    const int64_t n_blocks = task.cols / 32;
    const uint8_t* w[NR];
    for (int r = 0; r < NR; ++r)
      w[r] = task.weights + (row + r * row_step) * int64_t(task.row_bytes);
    __m512 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) acc[r][k] = _mm512_setzero_ps();
    const AffineTokenGroup* token = tokens + t0 * groups;
    const int64_t full = n_blocks / 16;
    for (int64_t g = 0; g < full; ++g) fold_group<false, 2>(w, token, g, 16, acc);
    const int left = int(n_blocks - 16 * full);
    if (left > 8) fold_group<true, 2>(w, token, full, left, acc);
    if (left > 0 && left <= 8) fold_group<true, 1>(w, token, full, left, acc);
    const __m512i transpose = affine_transpose16();
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k)
        out[r * NT + k] = avx512_hsum(_mm512_permutexvar_ps(transpose, acc[r][k]));
  }
};

// The entry point's body: per block of tokens whose activations stay in L2
// (register_tile_loop.h), the tokens are arranged once into per-thread
// scratch, then every row tile of the range reads them.
template <class Blocks>
void affine_matmul_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  const int64_t n_blocks = task.cols / 32, groups = (n_blocks + 15) / 16;
  const int64_t per_block = activation_block_tokens(task, kAffineTokenTile);
  for (int64_t tb = 0; tb < task.n_tokens; tb += per_block) {
    const int64_t te = tb + per_block < task.n_tokens ? tb + per_block : task.n_tokens;
    auto* tokens = reinterpret_cast<AffineTokenGroup*>(
        thread_scratch(size_t((te - tb) * groups) * sizeof(AffineTokenGroup)));
    for (int64_t t = tb; t < te; ++t) {
      for (int64_t g = 0; g < groups; ++g) {
        const int n = n_blocks - 16 * g < 16 ? int(n_blocks - 16 * g) : 16;
        const int8_t* a = task.act_quants + t * task.cols + 512 * g;
        const float* da = task.act_scales + t * n_blocks + 16 * g;
        const float* sa = task.act_block_sums + t * n_blocks + 16 * g;
        AffineTokenGroup& out = tokens[(t - tb) * groups + g];
        if (n == 16)
          arrange_token_group<false, 2>(a, da, sa, n, out);
        else if (n > 8)
          arrange_token_group<true, 2>(a, da, sa, n, out);
        else
          arrange_token_group<true, 1>(a, da, sa, n, out);
      }
    }
    MatmulTask block = task;
    block.n_tokens = te - tb;
    block.act_quants = task.act_quants + tb * task.cols;
    block.act_scales = task.act_scales + tb * n_blocks;
    block.act_block_sums = task.act_block_sums + tb * n_blocks;
    block.y = task.y + tb * task.rows;
    run_register_tiles<kAffineRowTile, kAffineTokenTile>(
        block, r0, r1, AffineAvx512Dot<Blocks>{block, tokens, groups});
  }
}

}  // namespace
}  // namespace kvforge
