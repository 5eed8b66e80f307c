// Unpacking an IQ4_XS block's 6-bit sub-block scales (layout in
// formats/iq4_xs.h) with 64-bit word operations instead of 8 two-part
// bit-field extractions: byte j of the result is ls[j]. The nibbles of
// scales_l are spread to one per byte (byte 2i gets the low nibble of
// scales_l[i], byte 2i+1 its high nibble), the 2-bit fields of scales_h to
// one per byte, and the two combined. Integer-unit work, which leaves the
// vector units to the dot products.
//
// `static`: each including kernel file (any ISA) gets a private copy.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/formats/iq4_xs.h"

namespace kvforge {

static inline uint64_t iq4_xs_unpack_scale_bytes(const BlockIQ4_XS& b) {
  uint32_t low;
  std::memcpy(&low, b.scales_l, 4);
  uint64_t x = low;                           // bytes s0 s1 s2 s3
  x = (x | x << 16) & 0x0000ffff0000ffffull;  // s0 s1 .. .. s2 s3 .. ..
  x = (x | x << 8) & 0x00ff00ff00ff00ffull;   // s0 .. s1 .. s2 .. s3 ..
  x = (x & 0x000f000f000f000full) | (x & 0x00f000f000f000f0ull) << 4;
  uint64_t h = b.scales_h;                    // 8 fields of 2 bits
  h = (h | h << 24) & 0x000000ff000000ffull;  // 4 fields per 32-bit half
  h = (h | h << 12) & 0x000f000f000f000full;  // 2 fields per 16-bit quarter
  h = (h | h << 6) & 0x0303030303030303ull;   // 1 field per byte
  return x | h << 4;
}

}  // namespace kvforge
