#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/q2_k.h"
#include "formats_test_util.h"

namespace kvforge {
namespace formats_q2_k_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

// Sub-block j's 4-bit scale and min: two permutations of 0..15, so every
// nibble value (both extremes included) appears in both fields.
int scale_of(int j) { return (7 * j + 3) % 16; }
int min_of(int j) { return (5 * j + 9) % 16; }
// Element e's 2-bit quant: each sub-block of 16 holds every value 0..3 four
// times, at shifting places, so every value sits at every bit pair, in both
// halves and in both halves of the 32 bytes of a half.
int quant_of(int e) { return (e + e / 16) % 4; }

constexpr float kD = 0.333251953125f;      // half 0x3555
constexpr float kDmin = 0.0999755859375f;  // half 0x2e66

// Places quant q of element e by the bit positions spelled out in q2_k.h,
// element by element (not the way the library packs whole blocks).
void place_quant(BlockQ2_K& b, int e, int q) {
  const int half = e / 128, pair = (e % 128) / 32, l = e % 32;
  uint8_t& byte = b.qs[32 * half + l];
  byte = uint8_t((byte & ~(3 << (2 * pair))) | q << (2 * pair));
}

BlockQ2_K hand_built_block(uint16_t d, uint16_t dmin) {
  BlockQ2_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = d;
  b.dmin = dmin;
  for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(scale_of(j) | min_of(j) << 4);
  for (int e = 0; e < 256; ++e) place_quant(b, e, quant_of(e));
  return b;
}

TEST(Q2_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ2_K, scales), 0u);
  EXPECT_EQ(offsetof(BlockQ2_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ2_K, d), 80u);
  EXPECT_EQ(offsetof(BlockQ2_K, dmin), 82u);
}

// x = (d * sc[j]) * q - (dmin * m[j]), each product rounded to f32 on its
// own, for super-scales of both signs: positive d and dmin, negative d and
// dmin (the min is then added), and mixed.
TEST(Q2_K, DequantizesHandBuiltBlocksBitExactly) {
  BlockQ2_K blocks[3] = {hand_built_block(0x3555, 0x2e66), hand_built_block(0xc000, 0xb800),
                         hand_built_block(0xb555, 0x3c00)};
  const float ds[3] = {kD, -2.0f, -kD}, dmins[3] = {kDmin, -0.5f, 1.0f};
  float out[768];
  dequantize_row_q2_k(blocks, out, 768);
  for (int blk = 0; blk < 3; ++blk) {
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16;
      const float step = ds[blk] * float(scale_of(j));
      const float min = dmins[blk] * float(min_of(j));
      const float want = step * float(quant_of(e)) - min;
      ASSERT_EQ(testing::float_bits(out[256 * blk + e]), testing::float_bits(want))
          << "block " << blk << " element " << e;
    }
  }
}

// Each of the 2 bits of every element's quant, and each nibble of every
// scale byte, is read from its documented place: setting exactly one bit
// changes exactly the elements it belongs to.
TEST(Q2_K, EveryBitMovesOnlyItsElements) {
  BlockQ2_K base;
  std::memset(&base, 0, sizeof(base));
  base.d = 0x3c00;                          // 1.0
  base.dmin = 0x3800;                       // 0.5
  for (uint8_t& s : base.scales) s = 0x11;  // sc = 1, m = 1: every element is 1 * 0 - 0.5
  float ref[256];
  dequantize_row_q2_k(&base, ref, 256);
  for (int e = 0; e < 256; ++e) ASSERT_EQ(ref[e], -0.5f);
  for (int e = 0; e < 256; ++e) {
    for (int bit = 0; bit < 2; ++bit) {
      BlockQ2_K b = base;
      place_quant(b, e, 1 << bit);
      float out[256];
      dequantize_row_q2_k(&b, out, 256);
      for (int k = 0; k < 256; ++k) {
        ASSERT_EQ(out[k], k == e ? float(1 << bit) - 0.5f : -0.5f)
            << "element " << e << " bit " << bit << " showed up at " << k;
      }
    }
  }
  for (int e = 0; e < 256; ++e) place_quant(base, e, 1);  // every element 1 * 1 - 0.5
  for (int j = 0; j < 16; ++j) {
    BlockQ2_K b = base;
    b.scales[j] = 0x13;  // sc = 3: sub-block j becomes 3 - 0.5
    float out[256];
    dequantize_row_q2_k(&b, out, 256);
    b.scales[j] = 0x31;  // m = 3: sub-block j becomes 1 - 1.5
    float out_m[256];
    dequantize_row_q2_k(&b, out_m, 256);
    for (int k = 0; k < 256; ++k) {
      ASSERT_EQ(out[k], k / 16 == j ? 2.5f : 0.5f) << "scale " << j << " showed up at " << k;
      ASSERT_EQ(out_m[k], k / 16 == j ? -0.5f : 0.5f) << "min " << j << " showed up at " << k;
    }
  }
}

}  // namespace formats_q2_k_test
}  // namespace kvforge
