// Scalar dot products of weight rows stored as floats of some width (F32,
// F16, BF16) with f32 activations; used by dot_f32.cpp, dot_f16.cpp and
// dot_bf16.cpp (baseline ISA only, never by the *_avx*.cpp files).
//
// Each token keeps kLanes partial sums (element c goes to lane c % kLanes),
// combined pairwise at the end: a shorter addition chain than one running
// sum, so less rounding error, and independent chains the CPU can overlap.
#pragma once

#include <cstdint>

#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace scalar_float_dot {

inline constexpr int kTile = 4;
inline constexpr int kLanes = 8;

// Widen(const uint8_t* row, int64_t c) -> float: element c of a weight row.
template <class Widen>
struct FloatDot {
  const MatmulTask& task;
  Widen widen;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t cols = task.cols;
    float acc[NT][kLanes] = {};
    for (int64_t c0 = 0; c0 < cols; c0 += kLanes) {
      const int64_t n = cols - c0 < kLanes ? cols - c0 : kLanes;
      for (int64_t l = 0; l < n; ++l) {
        const float wv = widen(w, c0 + l);
        for (int k = 0; k < NT; ++k) acc[k][l] += wv * task.x[(t0 + k) * cols + c0 + l];
      }
    }
    for (int k = 0; k < NT; ++k) {
      const float* a = acc[k];
      out[k] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    }
  }
};

template <class Widen>
void run(const MatmulTask& task, int64_t r0, int64_t r1, Widen widen) {
  run_row_tiles<kTile>(task, r0, r1, FloatDot<Widen>{task, widen});
}

}  // namespace scalar_float_dot
}  // namespace kvforge
