#include "core/formats/kv_int8.h"

#include <cmath>
#include <cstring>

#include "core/formats/f16.h"

namespace kvforge {

void kv_int8_encode(const float* src, uint8_t* dst, int head_dim) {
  float amax = 0.0f;
  for (int i = 0; i < head_dim; ++i) amax = std::fmax(amax, std::fabs(src[i]));  // fmax skips NaN
  uint16_t d16 = fp32_to_fp16(amax / 127.0f);
  if ((d16 & 0x7fffu) == 0x7c00u) d16 = uint16_t((d16 & 0x8000u) | 0x7bffu);  // saturate inf
  const float d = fp16_to_fp32(d16);
  const float inv = d > 0.0f ? 1.0f / d : 0.0f;
  std::memcpy(dst, &d16, 2);
  auto* q = reinterpret_cast<int8_t*>(dst + 2);
  for (int i = 0; i < head_dim; ++i) {
    float v = src[i] * inv;
    if (!(v == v)) v = 0.0f;  // NaN
    v = std::round(v);
    q[i] = int8_t(v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v));
  }
}

void kv_int8_decode(const uint8_t* src, float* dst, int head_dim) {
  uint16_t d16;
  std::memcpy(&d16, src, 2);
  const float d = fp16_to_fp32(d16);
  const auto* q = reinterpret_cast<const int8_t*>(src + 2);
  for (int i = 0; i < head_dim; ++i) dst[i] = float(q[i]) * d;
}

}  // namespace kvforge
