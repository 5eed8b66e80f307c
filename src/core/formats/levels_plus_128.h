// 16 int8 levels (a 4-bit code's value) + 128, as unsigned bytes: the operand
// vpdpbusd multiplies, for the SIMD kernels that look levels up with one byte
// shuffle and take the + 128 back out through the activation sums. 16-byte
// aligned for one load.
#pragma once

#include <cstdint>

namespace kvforge {

struct LevelsPlus128 {
  alignas(16) uint8_t v[16];
};

constexpr LevelsPlus128 levels_plus_128(const int8_t (&levels)[16]) {
  LevelsPlus128 t{};
  for (int i = 0; i < 16; ++i) t.v[i] = uint8_t(levels[i] + 128);
  return t;
}

}  // namespace kvforge
