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
// Measured: `KVFORGE_BENCH_THREADS=1 matmul_bench` (column "groups8", the
// regrouped rows against the native ones in the same run, two runs): decode
// on cached weights Q4_0 1.07-1.18x, Q8_0 1.25-1.45x; decode from DRAM
// 0.92-1.03x (the memory stream, not the unpacking, sets that pace); prefill
// 0.92-1.26x. `kvforge bench` on the small preset, alternating runs against
// the native layout: Q4_0 tg128 +3-15 %, pp512 +2-8 %; Q8_0 pp512 +5-10 %,
// bench-serve decode at C=16 +4-12 %, tg128 within the noise.
//
// The cost: a copy of those matrices in memory (the file's pages stay mapped
// but are not read again) and a pass over them at load (small preset, Q4_0:
// see ModelWeights::regroup_for_kernels).
#pragma once

#include <cstdint>

#include "core/kernels/matmul.h"

namespace kvforge {

// Columns of one group of 8 blocks: regrouped rows hold whole groups.
inline constexpr int64_t kRegroupCols = 8 * 32;

// The regrouped layout for a weight type, or Native when it has none.
WeightLayout regrouped_layout(GgmlType type);

// "Native", "Q4_0Groups8", "Q8_0Groups8": for error messages.
const char* layout_name(WeightLayout layout);

// Whether a matrix of this type and width can be regrouped (whole groups of
// 8 blocks: cols a positive multiple of kRegroupCols).
bool regroup_fits(GgmlType type, int64_t cols);

// src: rows x cols in the native layout; dst: the same number of bytes in
// regrouped_layout(type). Throws std::invalid_argument unless regroup_fits.
void regroup_rows(GgmlType type, const void* src, int64_t rows, int64_t cols, void* dst);

// Whether matmul() on this machine, at the current SIMD level, reads the
// regrouped layouts (the AVX-512 level), i.e. whether loading should regroup.
bool regrouping_preferred();

}  // namespace kvforge
