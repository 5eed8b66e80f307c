#include "core/formats/q8_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/quantize_checks.h"

namespace kvforge {

void quantize_row_q8_k(const float* src, BlockQ8_K* dst, int64_t n) {
  const int64_t n_blocks = n / BlockQ8_K::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * BlockQ8_K::kElems;
    BlockQ8_K& out = dst[b];
    // The first element of largest magnitude, with its sign.
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < BlockQ8_K::kElems; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    if (amax < 1e-30f) {  // zero, or so small that 127/max would overflow
      std::memset(&out, 0, sizeof(out));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < BlockQ8_K::kElems; ++i) {
      out.qs[i] = int8_t(std::min(nearest_int(iscale * x[i]), 127));
    }
    for (int k = 0; k < BlockQ8_K::kElems / 16; ++k) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += out.qs[16 * k + i];
      out.bsums[k] = int16_t(sum);
    }
    out.d = 1.0f / iscale;
  }
}

void dequantize_row_q8_k(const BlockQ8_K* src, float* dst, int64_t n) {
  const int64_t n_blocks = n / BlockQ8_K::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int i = 0; i < BlockQ8_K::kElems; ++i) {
      dst[b * BlockQ8_K::kElems + i] = float(src[b].qs[i]) * src[b].d;
    }
  }
}

}  // namespace kvforge
