#include "core/formats/mxfp4.h"

#include <cmath>

#include "core/formats/block_rows.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {
namespace {

constexpr int kHalf = BlockMXFP4::kElems / 2;

// The first code whose value under scale d is nearest x (the reference's
// linear search, with its f32 operations).
uint8_t nearest_code(float x, float d) {
  int best = 0;
  float best_err = std::fabs(float(kMxfp4Levels[0]) * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(float(kMxfp4Levels[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return uint8_t(best);
}

void quantize_block(const float* x, BlockMXFP4& out) {
  float amax = 0.0f;
  for (int j = 0; j < BlockMXFP4::kElems; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  // As the reference, in f32; below 2^-125 its exponent would be negative,
  // which wraps modulo 256 here as numpy's (gguf-py's) conversion does.
  out.e = amax > 0.0f ? uint8_t(int(std::floor(std::log2(amax)) - 2 + 127)) : 0;
  const float d = e8m0_half(out.e);
  for (int j = 0; j < kHalf; ++j)
    out.qs[j] = uint8_t(nearest_code(x[j], d) | nearest_code(x[j + kHalf], d) << 4);
}

}  // namespace

void dequantize_row_mxfp4(const BlockMXFP4* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockMXFP4& b, float* y) {
    const float d = e8m0_half(b.e);
    for (int j = 0; j < kHalf; ++j) {
      y[j] = float(kMxfp4Levels[b.qs[j] & 15]) * d;
      y[j + kHalf] = float(kMxfp4Levels[b.qs[j] >> 4]) * d;
    }
  });
}

void quantize_row_mxfp4(const float* src, BlockMXFP4* dst, int64_t n) {
  quantize_row_blocks("quantize_row_mxfp4", src, dst, n, quantize_block);
}

}  // namespace kvforge
