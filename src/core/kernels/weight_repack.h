// Weight rows regrouped once at load time for a kernel that reads them
// faster that way (the layouts are described at WeightLayout, matmul.h).
//
// Q4_0Groups8, Q8_0Groups8: the AVX-512 kernels work on 4 blocks ("quads")
// at a time. From the file's layout they gather each quad's quants with
// permutes and shuffles (Q8_0 also flips their top bit) and its 4 scales with
// a permute and a convert: per (row, quad) 8 (Q4_0) or ~12 (Q8_0)
// instructions before any arithmetic. From groups of 8 blocks they load a
// quad's quants as they are and convert the 8 scales once per group: ~5.5
// (Q4_0) or ~2.5 (Q8_0). The products are bitwise those of the native
// layout: the same values meet the same instructions in the same order.
// It pays on cached weights and in prefill; decode from DRAM is set by the
// memory stream, not the unpacking (docs/bench/design-measurements.md).
//
// Q8_0Tiles16 (on machines with AMX int8): the AMX kernel multiplies 16
// tokens by 16 rows x 32 columns per instruction, reading the weights as an
// AMX "B" tile, which needs the 16 rows' quants of a block interleaved 4 by
// 4 (the layout at WeightLayout). The same interleave lets the AVX-512
// kernel that serves decode and small batches take 4 quants of 16 rows per
// vpdpbusd with the activations broadcast, so one layout serves every token
// count with one order of f32 operations (bitwise the same results).
// Q4_0Tiles16 does the same for Q4_0: its bytes are the 16 rows' nibble
// bytes interleaved 4 by 4, which unpack into the tile's 8 rows with an AND
// (low nibbles) or a shift and an AND (high nibbles) per 64 bytes.
//
// IQ4_NLTiles16, Q5_0Tiles16, Q5_1Tiles16, Q4_1Tiles16 and MXFP4Tiles16 do
// the same for those 32-element blocks: 4 quants of 16 rows per vpdpbusd, each row's
// block integers exact and folded into 16 lane sums as the native kernels
// fold them (block32_fold.h, affine_fold.h), so the bits do not change.
//
// Q4_KTiles16, Q5_KTiles16 and Q6_KTiles16 do the same for the K-quants
// users download most (Q4_K_M is Q4_K and Q6_K, Q5_K_M Q5_K and Q6_K): one
// vpdpbusd takes 4 quants of 16 rows, so decode forms each row's exact
// integers without the per-row unpacking and lane sums of the native
// kernels, and folds them in the scalar kernel's order (the same bits at
// every level and layout). Q2_KTiles16 does the same for Q2_K, whose
// native kernel builds a product table per row and super-block,
// Q3_KTiles16 for Q3_K (Q3_K_S's matrices but the output, most of Q3_K_M's),
// with the rows' hmask bytes beside their low-bit bytes, and IQ4_XSTiles16
// for IQ4_XS, its nibbles turned into codebook levels by one byte shuffle
// per 64 bytes.
//
// The cost: a copy of those matrices in memory (the file's pages stay mapped
// but are not read again) and a pass over them at load (small preset, Q4_0:
// see ModelWeights::regroup_for_kernels).
#pragma once

#include <cstdint>

#include "core/kernels/matmul.h"

namespace kvforge {

// Columns of one group of 8 blocks: Groups8 rows hold whole groups.
inline constexpr int64_t kRegroupCols = 8 * 32;

// The layout this machine's kernels want for a rows x cols matrix of a
// weight type: Q4_0, Q8_0: Tiles16 where it fits (rows a multiple of 16;
// AMX or not, see matmul.h), else Groups8 where that fits (cols a multiple of
// 256), else Native; F16, BF16: F16Interleaved16 / BF16Interleaved16 where
// rows are a multiple of 16, else Native; Q4_K: Q4_KTiles16 where rows are a
// multiple of 16 (and cols of 256), else Native, and Q5_K, Q6_K, Q2_K, Q3_K
// and IQ4_XS likewise (Q5_KTiles16, Q6_KTiles16, Q2_KTiles16, Q3_KTiles16,
// IQ4_XSTiles16); IQ4_NL, Q5_0, Q5_1, Q4_1, MXFP4: their Tiles16 layouts where rows
// are a multiple of 16, else Native; Native for the other types.
WeightLayout regrouped_layout(GgmlType type, int64_t rows, int64_t cols);

// "Native", "Q4_0Groups8", ..., "BF16Interleaved16": for error messages.
const char* layout_name(WeightLayout layout);

// The weight type a regrouped layout holds (F32 for Native: any).
GgmlType layout_type(WeightLayout layout);

// Whether a rows x cols matrix of the layout's type can take the layout:
// Groups8 needs cols a positive multiple of kRegroupCols, Tiles16 rows a
// positive multiple of kTiles16Rows and cols a positive multiple of 32,
// the Interleaved16 layouts rows a positive multiple of kTiles16Rows and cols > 0.
bool layout_fits(WeightLayout layout, int64_t rows, int64_t cols);
// What layout_fits asks of the shape, in words for error messages ("rows a
// multiple of 16 and cols of 32").
const char* layout_requirement(WeightLayout layout);

// src: rows x cols of layout_type(layout) in the native layout; dst: the
// same number of bytes in `layout`. Throws std::invalid_argument unless
// layout_fits and the layout is not Native.
void regroup_rows(WeightLayout layout, const void* src, int64_t rows, int64_t cols, void* dst);

// Whether matmul() gives the same bits for a matrix in `layout` as in the
// native layout (Native, the Q2_K .. Q6_K and IQ4_XS tiles and the IQ4_NL,
// Q5_0, Q5_1, Q4_1 and MXFP4 tiles; the Q4_0/Q8_0 tiles and groups and
// the Interleaved16 layouts sum in another order). A tensor-parallel share
// that cannot take such a layout may stay native.
bool layout_keeps_results(WeightLayout layout);

// Whether matmul() on this machine, at the current SIMD level, reads the
// regrouped layouts (the AVX-512 level), i.e. whether loading should regroup.
bool regrouping_preferred();

}  // namespace kvforge
