// KV head record "int8": symmetric 8-bit quantization with one scale per
// (position, kv head), i.e. per token per head.
//
// Record layout (2 + head_dim bytes, no padding, any head_dim):
//   offset 0   uint16 d            scale, IEEE half (f16.h), little-endian
//   offset 2   int8   q[head_dim]  values, in head_dim order
// Dequantization: x[i] = q[i] * d (one f32 multiply after int -> float).
//
// Quantization: d = half(amax / 127) where amax = max |x[i]|; q[i] =
// round-half-away(x[i] / d) clamped to [-127, 127] (the encoder divides by
// the *rounded* half scale, so what it chose is what the decoder sees).
// -128 is never produced: the range stays symmetric and the sign of a sum of
// products is never biased. Per-element error ≤ d/2 (plus ≤ 127·|Δd| from
// rounding d to a half, a relative 2^-11 of amax). amax = 0 gives d = 0 and
// all-zero q. NaN inputs are stored as 0; amax beyond 127·65504 saturates d.
//
// Why one scale per token per head: a head's keys for one token share one
// magnitude (RMS-normed activations times one projection), whereas across
// tokens a few positions (often the first) carry much larger values; a
// per-token scale keeps those from crushing everyone else's resolution, and
// the record stays self-contained so writing a token never rescales history.
// Why an f16 scale: a record is head_dim + 2 bytes against f16's
// 2 * head_dim (66 of 128 bytes at head_dim 64; an f32 scale would take 68).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvforge {

constexpr size_t kv_int8_record_bytes(int head_dim) { return 2 + size_t(head_dim); }
void kv_int8_encode(const float* src, uint8_t* dst, int head_dim);
void kv_int8_decode(const uint8_t* src, float* dst, int head_dim);

}  // namespace kvforge
