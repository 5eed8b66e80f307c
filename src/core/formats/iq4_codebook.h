// The 16-value non-linear codebook shared by IQ4_NL and IQ4_XS: a 4-bit
// index selects one of these int8 levels, which the block scale multiplies.
// The levels are denser near zero, where most weights of a trained layer
// lie, than 16 evenly spaced ones would be.
//
// Values from the published ggml type definition (kvalues_iq4nl).
#pragma once

#include <cstdint>

namespace kvforge {

inline constexpr int8_t kIq4Codebook[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// The levels + 128, as unsigned bytes: the operand vpdpbusd multiplies, for
// the SIMD kernels that look levels up with one byte shuffle and take the
// + 128 back out through the activation sums. 16-byte aligned for one load.
struct Iq4CodebookPlus128 {
  alignas(16) uint8_t v[16];
};
inline constexpr Iq4CodebookPlus128 kIq4CodebookPlus128 = [] {
  Iq4CodebookPlus128 t{};
  for (int i = 0; i < 16; ++i) t.v[i] = uint8_t(kIq4Codebook[i] + 128);
  return t;
}();

}  // namespace kvforge
