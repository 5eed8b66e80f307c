// Weight rows regrouped once at load time for a kernel that reads them
// faster that way (the layouts are described at WeightLayout, matmul.h).
//
// Q4_0Groups8: the AVX-512 Q4_0 kernel works on 4 blocks at a time. From
// the file's layout it gathers each quad's 4 x 16 nibble bytes with a
// two-source permute and its scales with another permute and a convert; from
// groups of 8 it loads the nibbles of a quad as one vector and converts the
// 8 scales once per group. Per (row, quad) that is ~5.5 instructions of
// unpacking instead of 8 (matmul_bench, 1 thread, Q4_0 decode: +15-35 %
// cached, +17-20 % from DRAM; `kvforge bench` on the small preset, Q4_0,
// alternating runs: tg128 +3-15 %, pp512 +2-8 %). The products are bitwise
// those of the native layout: the same values meet the same instructions in
// the same order.
//
// The cost: a copy of those matrices in memory (the file's pages stay mapped
// but are not read again) and a pass over them at load (~0.05 s for the
// small preset's 71 MB).
#pragma once

#include <cstdint>

#include "core/kernels/matmul.h"

namespace kvforge {

// A Q4_0 matrix with this many columns can be regrouped (whole groups of 8 blocks).
bool q4_0_groups8_fits(int64_t cols);

// src: rows x cols Q4_0 in the native layout; dst: the same number of bytes,
// regrouped. cols must fit (q4_0_groups8_fits), else std::invalid_argument.
void repack_q4_0_groups8(const void* src, int64_t rows, int64_t cols, void* dst);

// Whether matmul() on this machine, at the current SIMD level, reads
// Q4_0Groups8 (the AVX-512 level) — i.e. whether loading should regroup.
bool q4_0_groups8_preferred();

}  // namespace kvforge
