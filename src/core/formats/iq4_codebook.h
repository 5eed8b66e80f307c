// The 16-value non-linear codebook shared by IQ4_NL and IQ4_XS: a 4-bit
// index selects one of these int8 levels, which the block scale multiplies.
// The levels are denser near zero, where most weights of a trained layer
// lie, than 16 evenly spaced ones would be.
//
// Values from the published ggml type definition (kvalues_iq4nl).
#pragma once

#include <cstdint>

#include "core/formats/levels_plus_128.h"

namespace kvforge {

inline constexpr int8_t kIq4Codebook[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// The levels + 128 (levels_plus_128.h).
inline constexpr LevelsPlus128 kIq4CodebookPlus128 = levels_plus_128(kIq4Codebook);

}  // namespace kvforge
