// The quants of one block of a Tiles16 group (WeightLayout, matmul.h), as
// the VNNI kernel (dot_tiles16_avx512.cpp) and the AMX kernel
// (dot_tiles16_amx.cpp) both read them: quads(blk, k) is register k < 8, 4
// quants of each of the 16 rows as vpdpbusd's unsigned operand (Q8_0: as
// stored, + 128; Q4_0: the low nibbles of load k for k < 4, the high ones of
// load k - 4 after, + 8), which is also row k of the AMX "B" tile; offset(o)
// turns a token's Q8-rows offset (-128 x its quant sum) into the correction
// for that + 128 or + 8. kStoredAsTile: the stored bytes are the B tile.
//
// For those two ISA-flagged files only: everything here has internal
// linkage (see core/cpu_features.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/kernels/matmul_task.h"

namespace kvforge {
namespace {

struct Q8_0Quants {
  static constexpr int64_t kQuantBytes = kTiles16QuantBytes;
  static constexpr bool kStoredAsTile = true;
  static __m512i quads(const uint8_t* blk, int k) { return _mm512_loadu_si512(blk + 64 * k); }
  static int32_t offset(int32_t o) { return o; }
};

struct Q4_0Quants {
  static constexpr int64_t kQuantBytes = kTiles16Q4QuantBytes;
  static constexpr bool kStoredAsTile = false;
  static __m512i quads(const uint8_t* blk, int k) {
    const __m512i b = _mm512_loadu_si512(blk + 64 * (k & 3));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    return k < 4 ? _mm512_and_si512(b, low4) : _mm512_and_si512(_mm512_srli_epi16(b, 4), low4);
  }
  static int32_t offset(int32_t o) { return o / 16; }  // exact: o is a multiple of 128
};

}  // namespace
}  // namespace kvforge
