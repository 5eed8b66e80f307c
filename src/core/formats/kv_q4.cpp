#include "core/formats/kv_q4.h"

#include <cmath>
#include <cstring>

#include "core/formats/f16.h"

namespace kvforge {
namespace {

uint16_t finite_half(float x) {
  uint16_t h = fp32_to_fp16(x);
  if ((h & 0x7fffu) == 0x7c00u) h = uint16_t((h & 0x8000u) | 0x7bffu);  // saturate inf
  return h;
}

void encode_group(const float* x, uint8_t* dst) {
  float lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < kKvQ4Group; ++i) {
    lo = std::fmin(lo, x[i]);  // fmin/fmax skip NaN
    hi = std::fmax(hi, x[i]);
  }
  if (!(lo <= hi)) lo = hi = 0.0f;  // all NaN
  const uint16_t m16 = finite_half(lo);
  const float m = fp16_to_fp32(m16);
  const uint16_t d16 = finite_half(std::fmax(hi - m, 0.0f) / 15.0f);
  const float d = fp16_to_fp32(d16);
  const float inv = d > 0.0f ? 1.0f / d : 0.0f;
  std::memcpy(dst, &d16, 2);
  std::memcpy(dst + 2, &m16, 2);
  auto level = [&](float v) {
    float n = std::round((v - m) * inv);
    if (!(n > 0.0f)) return 0;  // also NaN
    return n > 15.0f ? 15 : int(n);
  };
  for (int i = 0; i < kKvQ4Group / 2; ++i)
    dst[4 + i] = uint8_t(level(x[i]) | (level(x[i + kKvQ4Group / 2]) << 4));
}

}  // namespace

void kv_q4_encode(const float* src, uint8_t* dst, int head_dim) {
  for (int g = 0; g < head_dim / kKvQ4Group; ++g)
    encode_group(src + g * kKvQ4Group, dst + size_t(g) * kKvQ4GroupBytes);
}

void kv_q4_decode(const uint8_t* src, float* dst, int head_dim) {
  for (int g = 0; g < head_dim / kKvQ4Group; ++g) {
    const uint8_t* rec = src + size_t(g) * kKvQ4GroupBytes;
    uint16_t d16, m16;
    std::memcpy(&d16, rec, 2);
    std::memcpy(&m16, rec + 2, 2);
    const float d = fp16_to_fp32(d16), m = fp16_to_fp32(m16);
    float* out = dst + g * kKvQ4Group;
    for (int i = 0; i < kKvQ4Group / 2; ++i) {
      out[i] = float(rec[4 + i] & 0x0f) * d + m;
      out[i + kKvQ4Group / 2] = float(rec[4 + i] >> 4) * d + m;
    }
  }
}

}  // namespace kvforge
