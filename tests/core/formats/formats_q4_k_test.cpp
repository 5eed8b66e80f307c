#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/q4_k.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

// Sub-block scales and mins chosen so that every 6-bit field has a distinct
// value and the sub-blocks 4..7 use both of their high bits.
constexpr uint8_t kScales[8] = {1, 17, 33, 63, 5, 22, 47, 60};
constexpr uint8_t kMins[8] = {2, 13, 40, 63, 9, 31, 50, 58};
// Packed by hand from the layout in q4_k.h:
//   bytes 0-3  = sc[0..3] | (sc[4..7] >> 4) << 6:  1|0<<6, 17|1<<6, 33|2<<6, 63|3<<6
//   bytes 4-7  = m[0..3]  | (m[4..7] >> 4) << 6:   2|0<<6, 13|1<<6, 40|3<<6, 63|3<<6
//   bytes 8-11 = (sc[4..7] & 15) | (m[4..7] & 15) << 4: 5|9<<4, 6|15<<4, 15|2<<4, 12|10<<4
constexpr uint8_t kPackedScales[12] = {0x01, 0x51, 0xa1, 0xff, 0x02, 0x4d,
                                       0xe8, 0xff, 0x95, 0xf6, 0x2f, 0xac};
constexpr float kD = 0.333251953125f;      // half 0x3555
constexpr float kDmin = 0.0999755859375f;  // half 0x2e66

int nibble_of(int e) { return (e * 7 + 3) % 16; }

BlockQ4_K hand_built_block() {
  BlockQ4_K b;
  b.d = 0x3555;
  b.dmin = 0x2e66;
  std::memcpy(b.scales, kPackedScales, 12);
  // Element 64g + l is the low nibble of qs[32g + l], 64g + 32 + l the high one.
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      b.qs[32 * g + l] = uint8_t(nibble_of(64 * g + l) | nibble_of(64 * g + 32 + l) << 4);
    }
  }
  return b;
}

TEST(Q4_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ4_K, d), 0u);
  EXPECT_EQ(offsetof(BlockQ4_K, dmin), 2u);
  EXPECT_EQ(offsetof(BlockQ4_K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
}

TEST(Q4_K, UnpacksAllEightScalesAndMins) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    q4_k_scale_min(kPackedScales, j, sc, m);
    EXPECT_EQ(sc, kScales[j]) << "sub-block " << j;
    EXPECT_EQ(m, kMins[j]) << "sub-block " << j;
  }
}

// x = (d * sc[j]) * q - (dmin * m[j]), each product rounded to f32 on its own.
TEST(Q4_K, DequantizesHandBuiltBlockBitExactly) {
  BlockQ4_K blocks[2] = {hand_built_block(), hand_built_block()};
  blocks[1].d = 0xc000;  // -2: the second block must use its own super-scales
  blocks[1].dmin = 0x3c00;
  float out[512];
  dequantize_row_q4_k(blocks, out, 512);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const float step = kD * float(kScales[j]);
    const float min = kDmin * float(kMins[j]);
    const float want = step * float(nibble_of(e)) - min;
    ASSERT_EQ(testing::float_bits(out[e]), testing::float_bits(want)) << "element " << e;
    const float step2 = -2.0f * float(kScales[j]);
    const float want2 = step2 * float(nibble_of(e)) - float(kMins[j]);
    ASSERT_EQ(out[256 + e], want2) << "second block, element " << e;
  }
}

}  // namespace
}  // namespace kvforge
