// The quantizer shared by Q4_1 and Q5_1, whose blocks store 32 values as
//   x ~= float(q) * d + m,   q an integer level in [0, max_level],
// with the step d and the offset m (the value of level 0) as IEEE halves.
//
// Our own search, aimed at the smallest squared error of the block as it
// will be decoded (halves and all), not at bit-identity with any other
// quantizer:
//   1. candidate real (d, m): the published one (d = (max - min)/max_level,
//      m = min) and, for 21 step sizes around it, a nearest-level assignment
//      refitted twice by least squares for (d, m) (assign, refit, reassign,
//      refit); the candidate with the lowest error is kept;
//   2. for the published candidate and the best one, every pair of the three
//      halves nearest d and the three nearest m is tried, each value moved to
//      its nearest level under those stored halves, then the three halves
//      nearest the mean residual of the best pair's levels as the offset;
//      the lowest decoded error wins.
// Since step 2 includes the published (d, m) rounded as the published
// quantizer rounds them, and nearest levels are never worse than its
// round-half-up ones, each block's error is at most the published
// quantizer's (up to ties decided by f32 rounding).
//
// d and m saturate at +-65504 (the largest finite half): blocks beyond the
// half range are not representable, but decode to finite values.
#pragma once

#include <cstdint>

namespace kvforge {

struct AffineBlock {
  static constexpr int kElems = 32;
  uint16_t d = 0;  // f16 step
  uint16_t m = 0;  // f16 offset (value of level 0)
  uint8_t q[kElems] = {};
};

// x: 32 finite values; max_level: 15 (Q4_1) or 31 (Q5_1).
AffineBlock fit_affine_block(const float* x, int max_level);

}  // namespace kvforge
