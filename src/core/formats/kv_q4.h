// KV head record "q4": 4-bit affine quantization (scale + offset) in groups
// of 32 consecutive values along head_dim.
//
// Record layout (head_dim/32 groups of 20 bytes, head_dim a multiple of 32):
//   group g at offset 20·g:
//     offset 0   uint16 d       step, IEEE half (f16.h), little-endian
//     offset 2   uint16 m       offset (the group minimum), IEEE half
//     offset 4   uint8  qs[16]  nibbles: element i      (i < 16) = low nibble  of qs[i]
//                                        element i + 16 (i < 16) = high nibble of qs[i]
// Dequantization: x = n·d + m with n in [0, 15] (f32 multiply, then add).
// The "low nibbles = first half" order (as in Q4_0) lets SIMD code unpack a
// group with one AND and one shift into 16 consecutive values each.
//
// Quantization: m = half(min), d = half((max - m) / 15), n = round((x - m)/d)
// clamped to [0, 15]. Error per element ≤ d/2 plus the effect of rounding d
// and m to halves (relative 2^-11). A constant group has d = 0 and decodes
// exactly to half(x). NaN inputs are stored as n = 0; inputs must be finite.
//
// Why scale + offset rather than symmetric: groups of K and V are not
// centred on zero (a group's mean is a sizeable fraction of its spread), so
// a symmetric range wastes levels on one side; on the default model's and
// the small preset's K and V the affine form has the lower error
// (docs/bench/design-measurements.md) for 2 more bytes per group (20 vs 18).
// At 4 bits accuracy is the scarce resource, so we spend the two bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvforge {

inline constexpr int kKvQ4Group = 32;
inline constexpr size_t kKvQ4GroupBytes = 20;

constexpr size_t kv_q4_record_bytes(int head_dim) {
  return size_t(head_dim / kKvQ4Group) * kKvQ4GroupBytes;
}
// head_dim must be a multiple of 32 (kv_head_bytes checks it).
void kv_q4_encode(const float* src, uint8_t* dst, int head_dim);
void kv_q4_decode(const uint8_t* src, float* dst, int head_dim);

}  // namespace kvforge
