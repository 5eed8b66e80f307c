// Q8_0 / Q4_0 weights in the Tiles16 layouts x Q8 rows on AMX int8 tiles,
// for batches (called by matmul_rows_{q8_0,q4_0}_tiles16_avx512 only when
// amx_int8_usable()). Per block of 32 columns, one tdpbsud multiplies up to
// 16 tokens' quants (tile A: tokens x 32 bytes, read in place from the
// activation rows) by a 16-row group's interleaved quants (tile B: 8 x 64
// bytes; Q8_0: as stored; Q4_0: unpacked from the 256 stored bytes into an
// L1 buffer, low nibbles then high) into 16 x 16 exact int32 block sums
// (tile C). The scales differ per block, so the sums cannot stay in the
// tile across blocks: each block's C goes to memory and an AVX-512
// epilogue performs
//   acc = fma(float(C + offset), dw * da, acc)
// exactly as the VNNI kernel does per (row, token), hence the same bits.
// Three groups share each A tile (tiles: 0 = A, 1..3 = B, 4..6 = C).
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"
#include "core/kernels/tiles16_quants.h"

namespace kvforge {
namespace {

constexpr int64_t kScaleBytes = kTiles16ScaleBytes;
constexpr int kMaxGroups = 3;
constexpr int64_t kBTileBytes = 8 * 64;

// Q4_0's B tile (tiles16_quants.h) unpacked into buf, 64-byte aligned.
template <class Q>
void unpack_b_tile(const uint8_t* blk, uint8_t* buf) {
  for (int k = 0; k < 8; ++k) _mm512_store_si512(buf + 64 * k, Q::quads(blk, k));
}

// The tile configuration (palette 1) as ldtilecfg reads it.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void configure_tiles(int tokens) {
  TileConfig c;
  c.rows[0] = uint8_t(tokens);
  c.colsb[0] = 32;
  for (int j = 0; j < kMaxGroups; ++j) {
    c.rows[1 + j] = 8;
    c.colsb[1 + j] = 64;
    c.rows[4 + j] = uint8_t(tokens);
    c.colsb[4 + j] = 64;
  }
  // Not _tile_loadconfig: GCC 12's tells the compiler it reads only the first
  // 8 bytes, so the stores of the rest may be dropped or sunk past it.
  __asm__ volatile("ldtilecfg %0" ::"m"(c));
}

// Blocks per round: their tiles first (phase 1: the tile unit runs them back
// to back into `sums`), then the epilogue over all of them (phase 2) with
// each token's accumulator held in a register across the round's blocks.
constexpr int kRoundBlocks = 8;
constexpr int kTileInts = 16 * 16;

// Phase 2 for NM tokens from t of one group: acc [NM][16] in and out,
// sums [kRoundBlocks][kMaxGroups][16 * 16] of which group j's are read from
// tile row `row` (token t) on.
template <class Q, int NM>
void epilogue(const MatmulTask& task, const int32_t* sums, int j, const uint8_t* scales, int64_t b0,
              int blocks_in_round, int64_t t, int row, float* acc) {
  const int64_t blocks = task.cols / 32;
  __m512 a[NM];  // the first round starts from zero, not from acc (uninitialised then)
  for (int m = 0; m < NM; ++m) a[m] = b0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(acc + 16 * m);
  for (int bb = 0; bb < blocks_in_round; ++bb) {
    const int64_t b = b0 + bb;
    const __m512 dw = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kScaleBytes)));
    const int32_t* c = sums + (bb * kMaxGroups + j) * kTileInts + 16 * row;
    for (int m = 0; m < NM; ++m) {
      const int64_t at = (t + m) * blocks + b;
      const __m512i isum = _mm512_add_epi32(_mm512_load_si512(c + 16 * m),
                                            _mm512_set1_epi32(Q::offset(task.act_offsets[at])));
      const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(task.act_scales[at]));
      a[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), s, a[m]);
    }
  }
  for (int m = 0; m < NM; ++m) _mm512_store_ps(acc + 16 * m, a[m]);
}

// Tokens [t0, t0 + nt) in steps of up to 8 (register accumulators).
template <class Q, int NM = 8>
void epilogue_upto(const MatmulTask& task, const int32_t* sums, int j, const uint8_t* scales,
                   int64_t b0, int blocks_in_round, int64_t t, int row, int nt, float* acc) {
  if constexpr (NM > 1) {
    if (nt < NM)
      return epilogue_upto<Q, NM - 1>(task, sums, j, scales, b0, blocks_in_round, t, row, nt, acc);
  }
  epilogue<Q, NM>(task, sums, j, scales, b0, blocks_in_round, t, row, acc);
}

// Block b of the kMaxGroups groups at `next` into L2 (T1): its quants, and on
// even blocks the cache line of scales that block starts.
template <class Q>
[[gnu::always_inline]] inline void prefetch_block(const uint8_t* next, int64_t group_bytes,
                                                  int64_t blocks, int64_t b) {
  constexpr int64_t kQuantBytes = Q::kQuantBytes;
  for (int j = 0; j < kMaxGroups; ++j)
    for (int line = 0; line < kQuantBytes / 64; ++line)
      _mm_prefetch(
          reinterpret_cast<const char*>(next + j * group_bytes + b * kQuantBytes + 64 * line),
          _MM_HINT_T1);
  if (b % 2 == 0)
    for (int j = 0; j < kMaxGroups; ++j)
      _mm_prefetch(reinterpret_cast<const char*>(next + j * group_bytes + blocks * kQuantBytes +
                                                 b * kScaleBytes),
                   _MM_HINT_T1);
}

// Phase 1 of one block: tile A (tokens x 32 bytes from a, rows `stride`
// apart) times each group's B tile bt[j] into C tile 4 + j.
template <int G>
[[gnu::always_inline]] inline void multiply_block(const int8_t* a, int64_t stride,
                                                  const uint8_t* const* bt) {
  _tile_loadd(0, a, stride);
  _tile_loadd(1, bt[0], 64);
  if constexpr (G > 1) _tile_loadd(2, bt[1], 64);
  if constexpr (G > 2) _tile_loadd(3, bt[2], 64);
  _tile_zero(4);
  _tile_dpbsud(4, 0, 1);
  if constexpr (G > 1) {
    _tile_zero(5);
    _tile_dpbsud(5, 0, 2);
  }
  if constexpr (G > 2) {
    _tile_zero(6);
    _tile_dpbsud(6, 0, 3);
  }
}

// The C tiles of multiply_block into c [G][16 * 16].
template <int G>
[[gnu::always_inline]] inline void store_block_sums(int32_t* c) {
  _tile_stored(4, c, 64);
  if constexpr (G > 1) _tile_stored(5, c + kTileInts, 64);
  if constexpr (G > 2) _tile_stored(6, c + 2 * kTileInts, 64);
}

// Groups g..g+G-1 for tokens [t0, t0 + nt). next: the groups the caller
// computes after these (nullptr: none), whose block b this prefetches while
// computing block b here: tile loads do not train the hardware prefetchers,
// and in a batched decode step every weight comes from memory once. Into L2
// only (T1): the next triple is 38-102 KiB ahead, more than L1 holds beside
// the current block's tiles.
template <class Q, int G>
void groups_tile(const MatmulTask& task, int64_t g, int64_t t0, int nt, const uint8_t* next) {
  constexpr int64_t kQuantBytes = Q::kQuantBytes;
  const int64_t blocks = task.cols / 32;
  const int64_t group_bytes = kTiles16Rows * int64_t(task.row_bytes);
  const uint8_t* w[G];
  for (int j = 0; j < G; ++j) w[j] = task.weights + (g + j) * group_bytes;
  const int8_t* a = task.act_quants + t0 * task.cols;
  // sums: the round's block sums, tile C rows = tokens (relative to t0).
  alignas(64) int32_t sums[kRoundBlocks * kMaxGroups * kTileInts];
  alignas(64) float acc[G][16 * 16];  // written by the first round's epilogue
  // Q4_0's unpacked B tiles, two blocks' worth: block b + 1's are unpacked
  // while block b's tile products run, so a tile load never waits for the
  // vector stores just before it.
  alignas(64) uint8_t b_buf[Q::kStoredAsTile ? 1 : 2][G][kBTileBytes];
  if constexpr (!Q::kStoredAsTile)
    for (int j = 0; j < G; ++j) unpack_b_tile<Q>(w[j], b_buf[0][j]);
  for (int64_t b0 = 0; b0 < blocks; b0 += kRoundBlocks) {
    const int in_round = int(blocks - b0 < kRoundBlocks ? blocks - b0 : kRoundBlocks);
    for (int bb = 0; bb < in_round; ++bb) {
      const int64_t b = b0 + bb;
      if (next) prefetch_block<Q>(next, group_bytes, blocks, b);
      const uint8_t* bt[G];
      for (int j = 0; j < G; ++j) {
        if constexpr (!Q::kStoredAsTile)
          bt[j] = b_buf[b & 1][j];
        else
          bt[j] = w[j] + b * kQuantBytes;
      }
      multiply_block<G>(a + 32 * b, task.cols, bt);
      if constexpr (!Q::kStoredAsTile)
        if (b + 1 < blocks)
          for (int j = 0; j < G; ++j)
            unpack_b_tile<Q>(w[j] + (b + 1) * kQuantBytes, b_buf[(b + 1) & 1][j]);
      store_block_sums<G>(sums + bb * kMaxGroups * kTileInts);
    }
    for (int j = 0; j < G; ++j) {
      const uint8_t* scales = w[j] + blocks * kQuantBytes;
      for (int m = 0; m < nt; m += 8) {
        epilogue_upto<Q>(task, sums, j, scales, b0, in_round, t0 + m, m, nt - m < 8 ? nt - m : 8,
                         acc[j] + 16 * m);
      }
    }
  }
  for (int j = 0; j < G; ++j)
    for (int m = 0; m < nt; ++m)
      _mm512_storeu_ps(task.y + (t0 + m) * task.rows + (g + j) * kTiles16Rows,
                       _mm512_load_ps(acc[j] + 16 * m));
}

}  // namespace

namespace {

template <class Q>
void matmul_tiles_amx(const MatmulTask& task, int64_t g0, int64_t g1, int64_t t0, int64_t t1) {
  const int nt = int(t1 - t0);
  configure_tiles(nt);
  int64_t g = g0;
  const int64_t group_bytes = kTiles16Rows * int64_t(task.row_bytes);
  // Only the first token tile streams the weights in: later ones (long
  // prefills) find them in L2, and prefetching them again measured slower.
  const bool stream = t0 == 0;
  for (; g + kMaxGroups <= g1; g += kMaxGroups) {
    const bool more = stream && g + 2 * kMaxGroups <= g1;
    groups_tile<Q, kMaxGroups>(task, g, t0, nt,
                               more ? task.weights + (g + kMaxGroups) * group_bytes : nullptr);
  }
  if (g1 - g == 2) groups_tile<Q, 2>(task, g, t0, nt, nullptr);
  if (g1 - g == 1) groups_tile<Q, 1>(task, g, t0, nt, nullptr);
  _tile_release();
}

}  // namespace

void matmul_tiles_q8_0_amx(const MatmulTask& task, int64_t g0, int64_t g1, int64_t t0, int64_t t1) {
  matmul_tiles_amx<Q8_0Quants>(task, g0, g1, t0, t1);
}

void matmul_tiles_q4_0_amx(const MatmulTask& task, int64_t g0, int64_t g1, int64_t t0, int64_t t1) {
  matmul_tiles_amx<Q4_0Quants>(task, g0, g1, t0, t1);
}

}  // namespace kvforge
