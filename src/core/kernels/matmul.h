// Weight-times-activation products, the bulk of the model's arithmetic.
//
//   y[t][r] = sum_c W[r][c] * x[t][c]
//   W: [rows][cols] in its storage format (cols contiguous, as in GGUF: ne0 = cols)
//   x: [n_tokens][cols] f32, y: [n_tokens][rows] f32
//
// n_tokens = 1 is decode (matrix-vector, bandwidth-bound); larger n_tokens is
// prefill or batched decode (matrix-matrix): each weight row is read from
// memory once per call and reused for every token while in cache.
// Work is split over output rows across the pool's threads. Activations are
// converted once per call into the format the weight type's dot product wants
// (8-bit blocks of 32 for Q8_0/Q4_0 weights, Q8_K for the K-quants and IQ4_XS,
// f32 as given for F32/F16/BF16; see kernels/matmul_task.h), into `scratch`,
// which only grows. Kernels: one file per weight type and SIMD level (dot_<type>.cpp,
// dot_<type>_avx2.cpp, dot_<type>_avx512.cpp), chosen by simd_level() per call;
// Q8_0 and Q4_0 rows in the Tiles16 layouts run batches of 4+ tokens on AMX
// int8 tiles where amx_int8_usable() (dot_tiles16_amx.cpp), bitwise as on AVX-512.
//
// Results are deterministic: a token's outputs do not depend on n_tokens, on
// which tokens share the call, or on the thread count (bitwise). For the
// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and IQ4_XS they are also bitwise
// identical across SIMD levels. Error against the exact product: f32
// summation only for F32/F16/BF16; for the quantized types
// additionally the activation rounding, at most sum_i |w_i| * d_i / 2 with
// d_i = (largest |x| in x_i's block of 32 or 256) / 127.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/threadpool.h"

namespace kvforge {

// How a weight's rows are arranged in memory.
//   Native: the type's blocks one after another, as in the GGUF file.
//   Q4_0Groups8, Q8_0Groups8: rows regrouped once at load for the AVX-512
//     kernels (kernels/weight_repack.h). Every 8 blocks become their 8 f16
//     scales (16 bytes), then two quads of 4 blocks each:
//       Q4_0: the 4 blocks' 16 nibble bytes one after another (64 bytes);
//       Q8_0: 64 bytes of elements 0..15 of the 4 blocks (16 per block),
//             then 64 bytes of elements 16..31, each quant stored + 128
//             (as an unsigned byte, i.e. with its top bit flipped).
//   Q8_0Tiles16: Q8_0 rows regrouped for the AMX int8 tiles (and the AVX-512
//     kernel that stands in for them on small batches), rows in groups of 16:
//     group g (rows 16g..16g+15, 16 * row_bytes bytes from 16g * row_bytes)
//     holds first, for each block b of 32 columns, 512 bytes of quants with
//     byte 512b + 64k + 4n + j = quant 4k + j (k < 8, j < 4) of the block in
//     row 16g + n, stored + 128 (top bit flipped) — an AMX "B" tile of 8
//     rows x 64 bytes, and for vpdpbusd one register per k holding 4 quants
//     of each of the 16 rows — then, after all blocks, 32 bytes per block of
//     the 16 rows' f16 scales (row n's at 2n). Rows a multiple of 16.
//     Every (row, token) is the f32 chain acc = fma(float(isum_b), dw_b *
//     da_b, acc) over the blocks in order, with isum_b the block's exact
//     integer dot product, at any token count, on AMX or AVX-512 alike.
//     Same bytes per row; only matmul() at the AVX-512 level reads them
//     (other levels and matmul_reference throw).
//   Q4_0Tiles16: the same for Q4_0 rows, with 256 bytes of quants per block:
//     byte 256b + 64k + 4n + j (k < 4, j < 4) = byte 4k + j of the block's
//     nibbles in row 16g + n, whose low nibble is quant 4k + j and high
//     nibble quant 16 + 4k + j, each stored as the file does, w + 8. The low
//     nibbles of the 256 bytes are then the first 4 rows of the AMX "B" tile
//     and the high nibbles its last 4 (the kernels unpack them with one AND
//     or one shift and AND per 64 bytes); the scales follow as in Q8_0Tiles16.
//   F16Interleaved16, BF16Interleaved16: F16 / BF16 rows in groups of 16,
//     column-major within a group: group g (16 * row_bytes bytes from
//     16g * row_bytes) holds for each column k the 16 rows' 2-byte values
//     side by side, element k of row 16g + n at byte 32k + 2n. One load widens to a register whose
//     lane n is row n's weight at k, so the AVX-512 kernel multiplies it by a token's x[k]
//     broadcast and never sums lanes: every (row, token) is the f32 chain
//     acc = fma(w[k], x[k], acc) over k = 0..cols-1 from 0, at any token
//     count. Rows a multiple of 16; any cols. Only matmul() at the AVX-512
//     level reads it.
//   Q4_KTiles16: Q4_K rows in groups of 16 for the AVX-512 VNNI kernel.
//     Group g's super-block b (kQ4_KTileBytes = 16 x 144 bytes at
//     (g * cols / 256 + b) * kQ4_KTileBytes) holds:
//       bytes    0..2047: byte 64k + 4n + j = qs byte 4k + j of row 16g + n
//                         (k < 32): the low nibbles of 64 bytes are 4 quants
//                         of sub-block 2(k / 8) for each of the 16 rows, the
//                         high nibbles 4 of sub-block 2(k / 8) + 1;
//       bytes 2048..2239: byte 2048 + 64i + 4n + j = scale byte 4i + j of
//                         row 16g + n (i < 3; formats/q4_k.h packs them);
//       bytes 2240..2271: the 16 rows' f16 d, row n's at 2n;
//       bytes 2272..2303: their f16 dmin, likewise.
//     Each (row, token) gets the scalar kernel's exact integers and its f32
//     fold (kquant_accumulate.h): the same bits as the native layout at
//     every level. Rows a multiple of 16, cols of 256. Only matmul() at the
//     AVX-512 level reads it.
//   Q5_KTiles16: as Q4_KTiles16 for Q5_K rows, kQ5_KTileBytes = 16 x 176
//     bytes per group and super-block: the nibble bytes (0..2047), then the
//     rows' 32 qh bytes interleaved 4 by 4 (2048..2559: byte 2048 + 64k + 4n +
//     j = qh byte 4k + j of row 16g + n), the scale bytes (2560..2751), the
//     16 d (2752..2783) and the 16 dmin (2784..2815).
//   Q6_KTiles16: the same for Q6_K rows, in 64-byte lines: first a tile of
//     kQ6_KTileBytes = 16 x 208 bytes per group and super-block, tile (g, b)
//     at (g * cols / 256 + b) * kQ6_KTileBytes, then the f16 d of every tile,
//     tile (g, b)'s 16 at the tiles' end + (g * cols / 256 + b) * 32 (row n's
//     at 2n). A tile holds, in the order the kernel reads them, for quarter
//     q = 2h + s (q < 4) and c < 4, 3 lines at 768q + 192c: the 4 bytes of
//     each row (byte 4n + j: row 16g + n's byte j) of ql from 64h + 16s + 4c,
//     of ql from 64h + 32 + 16s + 4c and of qh from 32h + 16s + 4c; then
//     at 3072 the rows' 16 int8 scales, byte 64i + 4n + j = scale 4i + j.
//   IQ4_NLTiles16, Q5_0Tiles16, Q5_1Tiles16, Q4_1Tiles16: rows of those
//     32-element block types in groups of 16 for the AVX-512 VNNI kernel
//     (dot_block32_tiles16_avx512.cpp). Group g (16 * row_bytes bytes from
//     16g * row_bytes) holds first, per block b of 32 columns, its quants
//     (256 bytes each for IQ4_NL and Q4_1, 320 for Q5_0 and Q5_1; block b's
//     at b times that):
//       bytes   0..255: byte 64k + 4n + j = qs byte 4k + j of row 16g + n
//                       (k < 4): low nibble element 4k + j, high nibble
//                       element 16 + 4k + j, as the file stores them;
//       bytes 256..319 (Q5_0, Q5_1 only): byte 256 + 4n + j of row 16g + n
//                       holds in bit k (k < 4) the fifth bit of element
//                       4k + j and in bit 4 + k that of element 16 + 4k + j;
//     then, after all blocks, per block 32 bytes of the 16 rows' f16 d
//     (row n's at 2n), for Q4_1 and Q5_1 followed by 32 bytes of their f16
//     m. Each (row, token) gets the native kernels' exact block integers and
//     their f32 fold (block32_fold.h, affine_fold.h; one accumulator register
//     per fold lane, lane n = row n): the same bits as the native layout at
//     every level. Rows a multiple of 16, cols of 32. Only matmul() at the
//     AVX-512 level reads them.
//   MXFP4Tiles16: MXFP4 rows the same way, 256 bytes of nibbles per block
//     (bytes 0..255 as above), then after all blocks per block 16 bytes of
//     the rows' E8M0 scale bytes (row n's at n): the same bits as the
//     native layout at every level, rows a multiple of 16, cols of 32.
//   Q2_KTiles16: Q2_K rows in groups of 16, one 64-byte aligned tile of
//     kQ2_KTileBytes = 16 x 84 bytes (21 lines) per group and super-block,
//     tile (g, b) at (g * cols / 256 + b) * kQ2_KTileBytes, its lines in the
//     order the kernel reads them:
//       bytes    0..255:  byte 64i + 4n + j = scale byte 4i + j of row 16g + n
//                         (i < 4; sc in the low nibble, m in the high one);
//       bytes  256..1279: byte 256 + 64k + 4n + j = qs byte 4k + j of row
//                         16g + n (k < 16): line k = 8h + 4p + c holds qs
//                         bytes 32h + 16p + 4c .. + 3, whose bit pair f is 4
//                         quants of sub-block 8h + 2f + p for each row;
//       bytes 1280..1311: the 16 rows' f16 d, row n's at 2n;
//       bytes 1312..1343: their f16 dmin, likewise.
//     Each (row, token) gets the scalar kernel's exact integers and its f32
//     fold: the same bits as the native layout at every level. Rows a
//     multiple of 16, cols of 256. Only matmul() at the AVX-512 level reads it.
//   Q3_KTiles16: the same for Q3_K rows, in 64-byte lines: first a tile of
//     kQ3_KTileBytes = 16 x 108 bytes (27 lines) per group and super-block,
//     tile (g, b) at (g * cols / 256 + b) * kQ3_KTileBytes, then the f16 d of
//     every tile, tile (g, b)'s 16 at the tiles' end + (g * cols / 256 + b)
//     * 32 (row n's at 2n). Each line holds 4 bytes of each row, byte 4n + j
//     being row 16g + n's byte j of: at 128c (c < 8) qs from 4c, at 128c +
//     64 hmask from 4c, at 1024 + 64c qs from 32 + 4c; at 1536 + 64i (i < 3)
//     the rows' scale bytes from 4i. That is the order the kernel reads them:
//     the first half's (qs 0..31) lines each with the hmask line of the same
//     columns (its bits 0-3 are that half's high bits, 4-7 the second's),
//     then the second half's; the scales, read with the first lines, last.
//   IQ4_XSTiles16: IQ4_XS rows in groups of 16, as Q4_KTiles16, in 34 whole
//     64-byte lines. Group g's super-block b (kIQ4_XSTileBytes = 16 x 136
//     bytes at (g * cols / 256 + b) * kIQ4_XSTileBytes) holds, in the order
//     the kernel reads them:
//       bytes    0..63:   byte 4n + i = scales_l byte i of row 16g + n (i < 4),
//                         so 32-bit lane n holds row n's 8 low scale nibbles;
//       bytes   64..95:   the 16 rows' scales_h, row n's at 64 + 2n;
//       bytes   96..127:  their f16 d, row n's at 96 + 2n;
//       bytes  128..2175: byte 128 + 64k + 4n + j = qs byte 4k + j of row
//                         16g + n (k < 32): the low nibbles of 64 bytes index
//                         4 levels of sub-block k / 4 for each of the 16 rows,
//                         the high nibbles the 4 levels 16 elements on.
//     Each (row, token) gets the scalar kernel's exact integers and its f32
//     fold (kquant_accumulate_scaled): the native layout's bits at every
//     level. Rows a multiple of 16, cols of 256. Only matmul() at the
//     AVX-512 level reads it.
enum class WeightLayout {
  Native,
  Q4_0Groups8,
  Q8_0Groups8,
  Q8_0Tiles16,
  Q4_0Tiles16,
  F16Interleaved16,
  BF16Interleaved16,
  Q4_KTiles16,
  Q5_KTiles16,
  Q6_KTiles16,
  IQ4_NLTiles16,
  Q5_0Tiles16,
  Q5_1Tiles16,
  Q4_1Tiles16,
  Q2_KTiles16,
  Q3_KTiles16,
  IQ4_XSTiles16,
  MXFP4Tiles16
};

struct WeightView {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features (contiguous)
  WeightLayout layout = WeightLayout::Native;
};

// Reusable buffer for converted activations; grows to the largest call and stays.
struct MatmulScratch {
  std::vector<uint8_t> activations;
  // Column-part products (kernels/column_parts.h): one part's columns of x
  // gathered ([n_tokens][part cols]) and the parts' products ([parts][n_tokens][rows]).
  std::vector<float> part_x;
  std::vector<float> part_y;
  void reserve(size_t bytes) {
    if (activations.size() < bytes) activations.resize(bytes);
  }
};

// Bytes of scratch a call with this weight and n_tokens needs (for reserving up front).
size_t matmul_scratch_bytes(const WeightView& w, int64_t n_tokens);

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch& scratch);

// One weight of a matmul_batch and where its result goes: y [n_tokens][w.rows].
struct MatmulOutput {
  WeightView w;
  float* y = nullptr;
};

// Several weights applied to the same activations (Q, K and V; gate and up)
// in ONE parallel region instead of one per weight: the activations are
// converted once per form the weights want, then the rows of all weights are
// split over the threads together. Each output is bitwise what matmul() gives
// for that weight alone. All weights must have the same cols; their types may differ.
void matmul_batch(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                  ThreadPool& pool, MatmulScratch& scratch);

// Like matmul_batch, but each weight on activations of its own: output i
// multiplies tokens [i * n_tokens, (i + 1) * n_tokens) of x
// ([outputs.size() * n_tokens][cols]). One conversion and one parallel
// region for all (the column parts of a matrix, core/kernels/column_parts.h);
// each output is bitwise what matmul() gives for its weight and tokens alone.
void matmul_batch_own_tokens(std::span<const MatmulOutput> outputs, const float* x,
                             int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch);

// Bytes of scratch a matmul_batch of these weights needs (each activation
// form they want once; for reserving up front).
size_t matmul_batch_scratch_bytes(std::span<const MatmulOutput> outputs, int64_t n_tokens);

// Most weights one matmul_batch / matmul_batch_own_tokens call takes: the
// gate and up slabs of the 8 experts a Qwen3-MoE token picks.
inline constexpr size_t kMatmulBatchMaxWeights = 16;

// How matmul_batch with n_threads splits these weights' rows over the
// threads. A thread slowed by a busy core (these machines are shared) would
// otherwise hold up the others at the end of every matmul.
enum class MatmulSplit {
  RangePerThread,  // one fixed range each: native, Groups8, Interleaved16 layouts, one thread
  ClaimedUnits,    // Tiles16 weights in a batch on AMX: units claimed one at a time
  Stealing,        // ThreadPool::parallel_for_stealing: Tiles16 weights in a batch on
                   // VNNI, and decode on any 16-row tile layout
};
MatmulSplit matmul_batch_split(std::span<const MatmulOutput> outputs, int64_t n_tokens,
                               int n_threads);

// Scalar reference: dequantizes each weight row to f32 and accumulates in
// double. Slow; the oracle for kernel tests.
void matmul_reference(const WeightView& w, const float* x, int64_t n_tokens, float* y);

}  // namespace kvforge
