// The internal contract between matmul() (kernels/matmul.cpp) and the
// per-weight-type kernels (kernels/dot_<type>[_avx2|_avx512].cpp).
//
// matmul() validates the shapes, converts the activations once into the form
// the weight type's dot product wants, then calls a row-range kernel on each
// thread. Kernel files compiled for AVX2 / AVX-512 export only the entry
// points declared here (everything else in them has internal linkage), and
// are only called after simd_level() says the machine has the instructions.
//
// Activation forms:
//   F32, F16, BF16 weights: the caller's f32 activations, untouched.
//   Q8_0, Q4_0 weights ("Q8 activations"): per token, per 32 values, a scale
//     d = f16(amax/127) and quants q = nearest-even(x * (127/amax)) in
//     [-127, 127]: exactly the block_q8_0 that llama.cpp's x86 quantizer
//     (quantize_row_q8_0) makes, with its f16 scale widened to f32 and kept in a
//     separate array, so kernels load contiguous quants and need no half
//     conversion. Blocks with amax < 1e-30 get d = 0, q = 0 (llama.cpp only
//     zeroes amax == 0; below 1e-30 its 127/amax overflows). The values are
//     identical at every level; the layout is the level's own:
//     - scalar and AVX2: quants [n][cols], scales [n][cols/32], no sums.
//     - AVX-512 ("quads"): blocks in groups of 4, Q = ceil(cols/128) quads per
//       token, the last one padded with zero blocks (q = 0, d = 0):
//         quants [n][Q][128]: bytes 16i..16i+15 hold elements 0..15 of the
//           quad's block i, bytes 64+16i..64+16i+15 its elements 16..31;
//         scales [n][Q][16]: lane l holds d of block l/4;
//         sums   [n][Q][16] int32: lane l holds the sum of the quants that
//           vpdpbusd adds into lane l over both halves (bytes 4l..4l+3 and
//           64+4l..64+4l+3).
//       One 512-bit vpdpbusd per half then leaves block i's partial sums in
//       lanes 4i..4i+3, where one f32 multiply per 4 blocks applies dw*da.
//     kQ8QuadBytes / kQ8QuadLanes below give the per-token sizes.
//   Q8_0Tiles16, Q4_0Tiles16 weights ("Q8 rows"): the same quants and scales
//     in the plain layout (quants [n][cols], scales [n][cols/32]), plus
//     offsets [n][cols/32] int32 = -128 x the sum of the block's quants: Q8_0
//     weights are stored + 128, so a dot product over them carries 128 x that
//     sum, which the offset takes back out exactly (Q4_0 weights, stored + 8,
//     take offset / 16).
//   Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4 weights ("Q8 blocks"): the Q8 activations'
//     quants and scales in the plain layout at every level (quants [n][cols],
//     scales [n][cols/32]), plus block_sums [n][cols/32] f32 = f16(amax/127 *
//     sum of the block's quants): llama.cpp's block_q8_1 `s`, which the
//     weights with a min (Q4_1, Q5_1) multiply by it. Q8_0-paired kernels
//     (Q5_0, IQ4_NL, MXFP4) ignore the sums.
//   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS weights: Q8_K blocks (formats/q8_k.h),
//     identical at every level.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/formats/q8_k.h"

namespace kvforge {

// The AVX-512 quad layout per token: Q = (cols / 32 + 3) / 4 quads of
// kQ8QuadBytes quants, kQ8QuadLanes scales and kQ8QuadLanes sums each.
inline constexpr int64_t kQ8QuadBytes = 128;
inline constexpr int64_t kQ8QuadLanes = 16;

struct MatmulTask {
  const uint8_t* weights = nullptr;  // row r at weights + r * row_bytes
  size_t row_bytes = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t n_tokens = 0;
  const float* x = nullptr;               // [n_tokens][cols] f32 (float weight types)
  const int8_t* act_quants = nullptr;     // [n_tokens][cols] Q8 activations (Q8_0, Q4_0)
  const float* act_scales = nullptr;      // [n_tokens][cols / 32] their scales
  const int32_t* act_sums = nullptr;      // AVX-512 only: [n_tokens][quads][16] (see above)
  const int32_t* act_offsets = nullptr;   // Q8 rows only: [n_tokens][cols / 32] (see above)
  const float* act_block_sums = nullptr;  // Q8 blocks only: [n_tokens][cols / 32] (see above)
  const BlockQ8_K* act_k = nullptr;       // [n_tokens][cols / 256] (K-quants, IQ4_XS)
  float* y = nullptr;                     // [n_tokens][rows]
};

// Computes y[t][r] for r in [r0, r1) and every token.
using RowKernel = void (*)(const MatmulTask& task, int64_t r0, int64_t r1);
// Quantizes tokens [t0, t1) of x ([n][cols]) into quants, scales and (AVX-512
// only) sums, each in the level's layout above.
using Q8ActivationQuantizer = void (*)(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                       int8_t* quants, float* scales, int32_t* sums);
// Quantizes tokens [t0, t1) of x ([n][cols]) into the Q8-blocks form above.
using Q8BlocksActivationQuantizer = void (*)(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                             int8_t* quants, float* scales, float* block_sums);
// Quantizes tokens [t0, t1) of x ([n][cols]) into blocks [n][cols/256].
using Q8KActivationQuantizer = void (*)(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                        BlockQ8_K* blocks);

// Rows in the *Groups8 layouts (weight_repack.h): AVX-512 only.
void matmul_rows_q4_0_groups8_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_q8_0_groups8_avx512(const MatmulTask& task, int64_t r0, int64_t r1);

// F16Interleaved16 / BF16Interleaved16 rows (AVX-512): like the Tiles16
// kernels below, every 16-row group whose first row lies in [r0, r1), for
// every token.
void matmul_rows_f16_interleaved16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_bf16_interleaved16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);

// Q8_0Tiles16 / Q4_0Tiles16 rows: computes every 16-row group whose first row
// lies in [r0, r1) (so ranges that split the rows anywhere still split the
// groups), with AMX for batches of at least kAmxMinTokens tokens where
// amx_int8_usable(), else AVX-512 VNNI; the two give the same bits.
void matmul_rows_q8_0_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_q4_0_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
// The AMX part: groups [g0, g1), tokens [t0, t1), t1 - t0 <= 16 (one tile).
void matmul_tiles_q8_0_amx(const MatmulTask& task, int64_t g0, int64_t g1, int64_t t0, int64_t t1);
void matmul_tiles_q4_0_amx(const MatmulTask& task, int64_t g0, int64_t g1, int64_t t0, int64_t t1);
inline constexpr int64_t kAmxMinTokens = 4;
// Tiles16 matmuls of at most this many tokens run the VNNI decode kernel
// (4 row streams per thread); larger ones the batch kernels.
inline constexpr int64_t kTiles16DecodeMaxTokens = 2;
// Whether a Tiles16 matmul of n_tokens runs on AMX (n_tokens >= kAmxMinTokens
// and amx_int8_usable()): the kernels' choice, which matmul_batch's row
// claiming follows. Defined in matmul.cpp, outside the ISA-flagged files.
bool tiles16_batch_on_amx(int64_t n_tokens);
// The Tiles16 layouts' sizes (WeightLayout, matmul.h): rows per group, and
// per block of 32 columns the group's quant bytes (Q8_0, Q4_0) and f16 scale bytes.
inline constexpr int64_t kTiles16Rows = 16;
inline constexpr int64_t kTiles16QuantBytes = kTiles16Rows * 32;
inline constexpr int64_t kTiles16Q4QuantBytes = kTiles16Rows * 16;
inline constexpr int64_t kTiles16ScaleBytes = kTiles16Rows * 2;
inline constexpr int64_t kTiles16E8M0Bytes = kTiles16Rows;  // MXFP4Tiles16: one byte a row
// Q4_KTiles16 rows (WeightLayout, matmul.h): every 16-row group whose first
// row lies in [r0, r1), Q8_K activations; bitwise the native kernels' results.
void matmul_rows_q4_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
// A Q4_KTiles16 group's super-block: its bytes and where its parts start.
inline constexpr int64_t kQ4_KTileBytes = kTiles16Rows * 144;
inline constexpr int64_t kQ4_KTileScales = kTiles16Rows * 128;
inline constexpr int64_t kQ4_KTileD = kQ4_KTileScales + kTiles16Rows * 12;
inline constexpr int64_t kQ4_KTileDmin = kQ4_KTileD + kTiles16Rows * 2;
// The same for Q5_KTiles16: as Q4_K's with the rows' qh bytes after the nibbles.
void matmul_rows_q5_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
inline constexpr int64_t kQ5_KTileBytes = kTiles16Rows * 176;
inline constexpr int64_t kQ5_KTileQh = kTiles16Rows * 128;
inline constexpr int64_t kQ5_KTileScales = kQ5_KTileQh + kTiles16Rows * 32;
inline constexpr int64_t kQ5_KTileD = kQ5_KTileScales + kTiles16Rows * 12;
inline constexpr int64_t kQ5_KTileDmin = kQ5_KTileD + kTiles16Rows * 2;
// The same for Q6_KTiles16.
void matmul_rows_q6_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
// A Q6_KTiles16 tile (a group's super-block without its d) and where its
// scales start; the d of every tile follow all the tiles.
inline constexpr int64_t kQ6_KTileBytes = kTiles16Rows * 208;
inline constexpr int64_t kQ6_KTileScales = kTiles16Rows * 192;
// IQ4_NLTiles16, Q5_0Tiles16 (Q8-rows activations: the offsets undo the
// levels' + 128 / + 16) and Q5_1Tiles16, Q4_1Tiles16 (Q8-blocks
// activations): every 16-row group whose first row lies in [r0, r1);
// bitwise the native kernels' results (block32_fold.h, affine_fold.h).
void matmul_rows_iq4_nl_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_mxfp4_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_q5_0_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_q5_1_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
void matmul_rows_q4_1_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
// A group's block of those layouts: 256 nibble bytes, for Q5_0 and Q5_1 then
// 64 bytes of fifth bits; after all blocks, per block the 16 d (and m).
inline constexpr int64_t kBlock32TileNibbleBytes = kTiles16Rows * 16;
inline constexpr int64_t kBlock32TileFifthBytes = kTiles16Rows * 4;
// The same for Q2_KTiles16: a group super-block's 21 lines, its scale
// bytes, qs bytes, d and dmin, in the order the kernel reads them.
void matmul_rows_q2_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
inline constexpr int64_t kQ2_KTileBytes = kTiles16Rows * 84;
inline constexpr int64_t kQ2_KTileQs = kTiles16Rows * 16;
inline constexpr int64_t kQ2_KTileD = kQ2_KTileQs + kTiles16Rows * 64;
inline constexpr int64_t kQ2_KTileDmin = kQ2_KTileD + kTiles16Rows * 2;
// The same for Q3_KTiles16: a tile (a group's super-block without its d),
// where its second half's qs lines and its scales start; the d of every
// tile follow all the tiles.
void matmul_rows_q3_k_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
inline constexpr int64_t kQ3_KTileBytes = kTiles16Rows * 108;
inline constexpr int64_t kQ3_KTileQsHigh = kTiles16Rows * 64;
inline constexpr int64_t kQ3_KTileScales = kTiles16Rows * 96;
// The same for IQ4_XSTiles16: a group's super-block in whole lines, its
// scales and d first, then the nibble bytes.
void matmul_rows_iq4_xs_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1);
inline constexpr int64_t kIQ4_XSTileBytes = kTiles16Rows * 136;
inline constexpr int64_t kIQ4_XSTileScalesH = kTiles16Rows * 4;
inline constexpr int64_t kIQ4_XSTileD = kIQ4_XSTileScalesH + kTiles16Rows * 2;
inline constexpr int64_t kIQ4_XSTileQs = kIQ4_XSTileD + kTiles16Rows * 2;
// Quantizes tokens [t0, t1) of x into the Q8-rows form above.
void quantize_activations_q8_rows_avx512(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                         int8_t* quants, float* scales, int32_t* offsets);

// Entry points, one set per SIMD level.
#define KVFORGE_DECLARE_KERNELS(level)                                                         \
  void matmul_rows_f32_##level(const MatmulTask& task, int64_t r0, int64_t r1);                \
  void matmul_rows_f16_##level(const MatmulTask& task, int64_t r0, int64_t r1);                \
  void matmul_rows_bf16_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q8_0_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q4_0_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q2_k_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q3_k_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q4_1_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q5_1_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q4_k_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q5_k_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_q6_k_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_iq4_xs_##level(const MatmulTask& task, int64_t r0, int64_t r1);             \
  void matmul_rows_q5_0_##level(const MatmulTask& task, int64_t r0, int64_t r1);               \
  void matmul_rows_iq4_nl_##level(const MatmulTask& task, int64_t r0, int64_t r1);             \
  void matmul_rows_mxfp4_##level(const MatmulTask& task, int64_t r0, int64_t r1);              \
  void quantize_activations_q8_##level(const float* x, int64_t cols, int64_t t0, int64_t t1,   \
                                       int8_t* quants, float* scales, int32_t* sums);          \
  void quantize_activations_q8_blocks_##level(const float* x, int64_t cols, int64_t t0,        \
                                              int64_t t1, int8_t* quants, float* scales,       \
                                              float* block_sums);                              \
  void quantize_activations_q8_k_##level(const float* x, int64_t cols, int64_t t0, int64_t t1, \
                                         BlockQ8_K* blocks);

KVFORGE_DECLARE_KERNELS(scalar)
KVFORGE_DECLARE_KERNELS(avx2)
KVFORGE_DECLARE_KERNELS(avx512)

#undef KVFORGE_DECLARE_KERNELS

}  // namespace kvforge
