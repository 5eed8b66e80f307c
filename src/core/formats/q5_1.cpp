#include "core/formats/q5_1.h"

#include <cstring>

#include "core/formats/affine_fit.h"
#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {

void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, int64_t n) {
  constexpr int kHalf = BlockQ5_1::kElems / 2;
  for_each_block(src, dst, n, [](const BlockQ5_1& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    uint32_t h;
    std::memcpy(&h, block.qh, sizeof(h));
    for (int i = 0; i < kHalf; ++i) {
      const int lo = (block.qs[i] & 0x0f) | int((h >> i) & 1) << 4;
      const int hi = (block.qs[i] >> 4) | int((h >> (i + kHalf)) & 1) << 4;
      out[i] = float(lo) * d + m;
      out[i + kHalf] = float(hi) * d + m;
    }
  });
}

void quantize_row_q5_1(const float* src, BlockQ5_1* dst, int64_t n) {
  constexpr int kHalf = BlockQ5_1::kElems / 2;
  const int64_t n_blocks = n / BlockQ5_1::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * BlockQ5_1::kElems;
    require_finite_block("quantize_row_q5_1", x, BlockQ5_1::kElems, b * BlockQ5_1::kElems);
    const AffineBlock fit = fit_affine_block(x, 31);
    dst[b].d = fit.d;
    dst[b].m = fit.m;
    uint32_t h = 0;
    for (int i = 0; i < BlockQ5_1::kElems; ++i) h |= uint32_t(fit.q[i] >> 4) << i;
    std::memcpy(dst[b].qh, &h, sizeof(h));
    for (int i = 0; i < kHalf; ++i)
      dst[b].qs[i] = uint8_t((fit.q[i] & 0x0f) | (fit.q[i + kHalf] & 0x0f) << 4);
  }
}

}  // namespace kvforge
