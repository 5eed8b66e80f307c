// KV head record "bf16": head_dim bfloat16 values, nothing else.
//
// Record layout (2·head_dim bytes, any head_dim): uint16 x[head_dim], each
// the upper half of the f32 (bf16.h: round to nearest even, NaN kept quiet).
// Decoding is exact (shift left 16). Relative error per element ≤ 2^-8 (half of the 2^-7 ulp).
//
// Why keep it beside f16: same size, 8 significant bits instead of 11, but
// the f32 exponent range, so no value overflows (f16 saturates to inf above
// 65504, which some models' K/V outliers reach) and decoding is a shift.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvforge {

constexpr size_t kv_bf16_record_bytes(int head_dim) { return 2 * size_t(head_dim); }

}  // namespace kvforge
