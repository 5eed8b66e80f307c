#include "core/formats/q4_k.h"

#include <cstring>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/kquant_min_search.h"
#include "core/formats/quantize_checks.h"

// The definition rounds d*sc*q and dmin*m separately before subtracting; a
// compiler building for FMA hardware must not fuse them (GCC would by default).
// src/core/CMakeLists.txt builds this file with -ffp-contract=off.

namespace kvforge {
namespace {

void quantize_block(const float* x, BlockQ4_K& out) {
  KQuantMinBlock found;
  search_kquant_min_block(x, 15, found);
  out.d = found.d;
  out.dmin = found.dmin;
  std::memcpy(out.scales, found.scales, sizeof(out.scales));
  const uint8_t* q = found.levels;
  for (int g = 0; g < BlockQ4_K::kElems / 64; ++g) {
    for (int l = 0; l < 32; ++l) {
      out.qs[32 * g + l] = uint8_t(q[64 * g + l] | (q[64 * g + 32 + l] << 4));
    }
  }
}

}  // namespace

void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockQ4_K& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    for (int g = 0; g < BlockQ4_K::kElems / 64; ++g) {
      const uint8_t* q = block.qs + 32 * g;
      float step_lo = 0, min_lo = 0, step_hi = 0, min_hi = 0;
      q4_k_step_min(block.scales, 2 * g, d, dmin, step_lo, min_lo);
      q4_k_step_min(block.scales, 2 * g + 1, d, dmin, step_hi, min_hi);
      for (int l = 0; l < 32; ++l) out[64 * g + l] = step_lo * float(q[l] & 15) - min_lo;
      for (int l = 0; l < 32; ++l) out[64 * g + 32 + l] = step_hi * float(q[l] >> 4) - min_hi;
    }
  });
}

void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t n) {
  quantize_row_blocks("quantize_row_q4_k", src, dst, n, quantize_block);
}

}  // namespace kvforge
