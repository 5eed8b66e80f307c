// Greedy decoding's pass over a vocabulary of logits: the index of the
// largest value, checking on the way that no value is NaN or +inf.
//
// It runs on the main thread while the pool's other threads wait, once per
// sequence of a decode step, so a scalar loop whose every step compares
// against the best so far (a dependent load, compare and select) would hold
// the whole step up (docs/bench/design-measurements.md). The SIMD levels take two passes
// instead: the maximum of all values (and whether any is invalid), then the
// first index holding it. Both passes read 32 or 64 bytes per instruction
// from memory the output matmul has just written.
#pragma once

#include <cstdint>

namespace kvforge {

struct ArgmaxResult {
  // Lowest index of the largest value (-0 and +0 equal); -inf counts as a
  // value, so all -inf gives index 0. Meaningless when first_invalid >= 0.
  int64_t index = 0;
  // Lowest index holding NaN or +inf, -1 when there is none.
  int64_t first_invalid = -1;
};

// x: [n], n >= 1. At the level simd_level() picks; every level returns the
// same result for the same input.
ArgmaxResult argmax_checked(const float* x, int64_t n);

// The levels (tests compare them; the SIMD ones only where the CPU has them).
ArgmaxResult argmax_checked_scalar(const float* x, int64_t n);
ArgmaxResult argmax_checked_avx2(const float* x, int64_t n);
ArgmaxResult argmax_checked_avx512(const float* x, int64_t n);

}  // namespace kvforge
