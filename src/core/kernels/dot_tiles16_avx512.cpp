// Q8_0 / Q4_0 weights in the Tiles16 layouts (matmul.h, weight_repack.h) x
// Q8 rows (matmul_task.h), AVX-512 VNNI: decode and small batches, and every
// batch on machines without AMX. Batches of kAmxMinTokens or more go to the
// AMX kernel (dot_tiles16_amx.cpp) where amx_int8_usable().
//
// One 64-byte register holds 4 quants of each of a group's 16 rows (Q8_0:
// as loaded; Q4_0: the low or the high nibbles of a load), so one vpdpbusd
// against a token's 4 quants broadcast adds 4 products into each row's
// lane: after the block's 8 registers, lane n holds row n's block sum, with
// no horizontal reduction. Each (row, token) then takes
//   acc = fma(float(isum_b), dw_b * da_b, acc)
// for blocks b in order, isum_b exact (the accumulator starts at the
// token's offset, -128 or -8 x its quant sum, undoing the weights' + 128 or
// + 8): the AMX kernel's epilogue performs these same operations, so both
// give the same bits.
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"
#include "core/kernels/tiles16_quants.h"
#include "core/kernels/tiles16_walk_avx512.h"

namespace kvforge {
namespace {

constexpr int64_t kScaleBytes = kTiles16ScaleBytes;  // a block's 16 f16 scales

// Q4_0 decode tiles read a group's scales (after its quants) 32 bytes per
// 256 bytes of quants, a stream too thin for the hardware prefetchers to run
// ahead of: its line kScalesAhead blocks on (past the group's end, the next
// group's first, the one the decode stream takes next) is fetched every
// second block. Q8_0's blocks are twice as long, so its scales are a thinner
// share of its stream and it does without (docs/bench/design-measurements.md).
constexpr int64_t kScalesAhead = 16;

template <class Q>
static inline void prefetch_scales_ahead(const TilesView<Q>& v, const uint8_t* group, int64_t b) {
  const int64_t ahead = b + kScalesAhead;
  const uint8_t* line = ahead < v.blocks
                            ? v.scales(group) + ahead * kScaleBytes
                            : v.scales(group + v.group_bytes) + (ahead - v.blocks) * kScaleBytes;
  _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
}

// The Q8_0 / Q4_0 tile: acc = fma(float(isum_b), dw_b * da_b, acc) per
// block (tiles16_walk_avx512.h walks the groups and tokens).
template <class Q>
struct VnniKernel : Tiles16Kernel<Q, false> {
  template <int G, int T>
  [[gnu::noinline]] static void tile(const Tiles16Tile<Q, G, T>& c) {
    const TilesView<Q>& v = c.v;
    const Tiles16Tile<Q, G, T> job = c;
    __m512 acc[G][T];
    for (int j = 0; j < G; ++j)
      for (int t = 0; t < T; ++t) acc[j][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < v.blocks; ++b) {
      prefetch_block_share(job.pf, b);
      if (Q::kQuantBytes == kTiles16Q4QuantBytes && T <= kTiles16DecodeMaxTokens && b % 2 == 0)
        for (int j = 0; j < G; ++j) prefetch_scales_ahead(v, job.w[j], b);
      __m512i isum[G][T];
      for (int t = 0; t < T; ++t) {
        const __m512i o = _mm512_set1_epi32(Q::offset(job.tok.offsets[t][b]));
        for (int j = 0; j < G; ++j) isum[j][t] = o;
      }
      for (int k = 0; k < 8; ++k) {
        for (int j = 0; j < G; ++j) {
          const __m512i wv = Q::quads(job.w[j] + b * Q::kQuantBytes, k);
          for (int t = 0; t < T; ++t)
            isum[j][t] =
                _mm512_dpbusd_epi32(isum[j][t], wv, _mm512_set1_epi32(job.tok.quads[t][8 * b + k]));
        }
      }
      for (int j = 0; j < G; ++j) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(v.scales(job.w[j]) + b * kScaleBytes)));
        for (int t = 0; t < T; ++t)
          acc[j][t] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[j][t]),
                              _mm512_mul_ps(dw, _mm512_set1_ps(job.tok.scales[t][b])), acc[j][t]);
      }
    }
    for (int j = 0; j < G; ++j)
      for (int t = 0; t < T; ++t) _mm512_storeu_ps(job.y(j, t), acc[j][t]);
  }
};

}  // namespace

void quantize_activations_q8_rows_avx512(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                         int8_t* quants, float* scales, int32_t* offsets) {
  // The plain layout's values are the same at every level (matmul_task.h).
  quantize_activations_q8_avx2(x, cols, t0, t1, quants, scales, nullptr);
  const int64_t blocks = cols / 32;
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const __m256i q =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(quants + t * cols + 32 * b));
      // 1 x q summed 4 bytes per lane, then the 8 lanes.
      const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, q);
      const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
      const __m128i h2 = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
      const __m128i h1 = _mm_add_epi32(h2, _mm_shuffle_epi32(h2, _MM_SHUFFLE(2, 3, 0, 1)));
      offsets[t * blocks + b] = -128 * _mm_cvtsi128_si32(h1);
    }
  }
}

namespace {

using AmxTiles = void (*)(const MatmulTask&, int64_t, int64_t, int64_t, int64_t);

template <class Q>
void matmul_rows_tiles16(const MatmulTask& task, int64_t r0, int64_t r1, AmxTiles amx) {
  const int64_t blocks = task.cols / 32;
  const TilesView<Q> v{task, blocks, kTiles16Rows * int64_t(task.row_bytes)};
  const int64_t g0 = (r0 + kTiles16Rows - 1) / kTiles16Rows,
                g1 = (r1 + kTiles16Rows - 1) / kTiles16Rows;
  if (g0 >= g1) return;
  if (task.n_tokens <= kTiles16DecodeMaxTokens) {
    tiles16_decode<VnniKernel<Q>>(v, g0, g1);
    return;
  }
  if (!tiles16_batch_on_amx(task.n_tokens)) {
    tiles16_batch<VnniKernel<Q>>(v, g0, g1, 0, task.n_tokens);
    return;
  }
  // Whole tiles of 16 tokens, then the rest: on AMX when it is worth it.
  const int64_t full = task.n_tokens / 16 * 16;
  for (int64_t t = 0; t < full; t += 16) amx(task, g0, g1, t, t + 16);
  if (task.n_tokens - full >= kAmxMinTokens) {
    amx(task, g0, g1, full, task.n_tokens);
  } else if (full < task.n_tokens) {
    tiles16_batch<VnniKernel<Q>>(v, g0, g1, full, task.n_tokens);
  }
}

}  // namespace

void matmul_rows_q8_0_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_tiles16<Q8_0Quants>(task, r0, r1, matmul_tiles_q8_0_amx);
}

void matmul_rows_q4_0_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_tiles16<Q4_0Quants>(task, r0, r1, matmul_tiles_q4_0_amx);
}

}  // namespace kvforge
