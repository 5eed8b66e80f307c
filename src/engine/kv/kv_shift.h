// Context shift, the storage half: K rows kept after the oldest positions of
// a sequence are dropped move `delta` positions down (delta < 0) by being
// re-rotated in place, with no recompute. RoPE turns each pair of a K row by
// an angle linear in its position (θ_i(p) = p·ω_i, linear and YaRN scaling
// folded into ω_i), so K rotated at p, turned by delta·ω_i, is K rotated at
// p + delta. V carries no position and is not touched.
//
// Precision per K format (kv_shift_test.cpp measures it):
//   f32        exact up to float rounding of one extra rotation;
//   f16, bf16  the row is decoded, rotated in f32 and encoded again: one
//              more rounding of the format than writing it fresh;
//   int8, q4   the same, so the row is quantized a second time (its scale or
//              groups refitted): about one more quantization error.
// Which positions are dropped and which blocks go back to the pool is the
// KV manager's business, not this file's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/formats/kv_format.h"
#include "core/ops/rope.h"

namespace kvforge {

// cos/sin of every pair's turn by `delta` positions at unit magnitude
// ([rope_dim], RopeTable::angles' layout): angles() scales cos and sin by
// attn_factor (and YaRN's m), which a row already rotated carries once.
void shift_rotation(const RopeTable& rope, int32_t delta, float* cos_sin);

// Re-rotates `n` K head records by `rotation` (shift_rotation of the delta):
// records of `head_dim` values in format `t`, `stride` bytes apart.
// `scratch` holds head_dim floats.
void rerotate_k_records(KvDtype t, uint8_t* first, size_t n, size_t stride, int head_dim,
                        const RopeTable& rope, const float* rotation, float* scratch);

}  // namespace kvforge
