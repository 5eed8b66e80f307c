#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/q4_k.h"
#include "core/formats/q5_k.h"
#include "formats_test_util.h"

namespace kvforge {
namespace formats_q5_k_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

// Every 6-bit field distinct from its neighbours; sub-blocks 4..7 take each
// of the four values of their two high bits, in both the scales and the mins,
// and 0 and 63 both occur.
constexpr uint8_t kScales[8] = {7, 44, 63, 21, 11, 30, 37, 58};
constexpr uint8_t kMins[8] = {0, 63, 25, 50, 62, 3, 20, 45};
// Packed by hand from the layout in q5_k.h (the Q4_K packing):
//   bytes 0-3  = sc[0..3] | (sc[4..7] >> 4) << 6:  7|0<<6, 44|1<<6, 63|2<<6, 21|3<<6
//   bytes 4-7  = m[0..3]  | (m[4..7] >> 4) << 6:   0|3<<6, 63|0<<6, 25|1<<6, 50|2<<6
//   bytes 8-11 = (sc[4..7] & 15) | (m[4..7] & 15) << 4: 11|14<<4, 14|3<<4, 5|4<<4, 10|13<<4
constexpr uint8_t kPackedScales[12] = {0x07, 0x6c, 0xbf, 0xd5, 0xc0, 0x3f,
                                       0x59, 0xb2, 0xeb, 0x3e, 0x45, 0xda};
constexpr float kD = 0.333251953125f;      // half 0x3555
constexpr float kDmin = 0.0999755859375f;  // half 0x2e66

// The 5-bit level stored for element e: as l runs over a qh byte's 32
// elements, every (group, nibble) position class sees its high bit both set
// and clear, and every low nibble occurs.
int level_of(int e) { return (e * 11 + 5) % 32; }

// Places level q of element e by the bit positions spelled out in q5_k.h,
// element by element (not the way the library packs whole groups).
void place_level(BlockQ5_K& b, int e, int q) {
  const int g = e / 64, h = (e % 64) / 32, l = e % 32;
  uint8_t& low = b.qs[32 * g + l];
  low = h == 0 ? uint8_t((low & 0xf0) | (q & 15)) : uint8_t((low & 0x0f) | (q & 15) << 4);
  const int bit = 2 * g + h;
  b.qh[l] = uint8_t((b.qh[l] & ~(1 << bit)) | (q >> 4) << bit);
}

BlockQ5_K hand_built_block() {
  BlockQ5_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = 0x3555;
  b.dmin = 0x2e66;
  std::memcpy(b.scales, kPackedScales, 12);
  for (int e = 0; e < 256; ++e) place_level(b, e, level_of(e));
  return b;
}

TEST(Q5_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ5_K, d), 0u);
  EXPECT_EQ(offsetof(BlockQ5_K, dmin), 2u);
  EXPECT_EQ(offsetof(BlockQ5_K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ5_K, qh), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qs), 48u);
}

TEST(Q5_K, UnpacksAllEightScalesAndMins) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    q4_k_scale_min(kPackedScales, j, sc, m);
    EXPECT_EQ(sc, kScales[j]) << "sub-block " << j;
    EXPECT_EQ(m, kMins[j]) << "sub-block " << j;
  }
}

TEST(Q5_K, HandBuiltBlockHasBothHighBitStatesAtEveryPosition) {
  const BlockQ5_K b = hand_built_block();
  for (int bit = 0; bit < 8; ++bit) {
    int set = 0;
    for (int l = 0; l < 32; ++l) set += (b.qh[l] >> bit) & 1;
    EXPECT_GT(set, 0) << "qh bit " << bit;
    EXPECT_LT(set, 32) << "qh bit " << bit;
  }
}

// x = (d * sc[j]) * q - (dmin * m[j]), each product rounded to f32 on its own;
// the second block has a negative super-scale and must use its own scales.
TEST(Q5_K, DequantizesHandBuiltBlockBitExactly) {
  BlockQ5_K blocks[2] = {hand_built_block(), hand_built_block()};
  blocks[1].d = 0xc000;  // -2
  blocks[1].dmin = 0x3c00;
  float out[512];
  dequantize_row_q5_k(blocks, out, 512);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const float step = kD * float(kScales[j]);
    const float min = kDmin * float(kMins[j]);
    const float want = step * float(level_of(e)) - min;
    ASSERT_EQ(testing::float_bits(out[e]), testing::float_bits(want)) << "element " << e;
    const float want2 = -2.0f * float(kScales[j]) * float(level_of(e)) - float(kMins[j]);
    ASSERT_EQ(out[256 + e], want2) << "second block, element " << e;
  }
  // Spot values worked out by hand: element 0 (sub-block 0, level 5) and
  // element 255 (sub-block 7, level (255 * 11 + 5) % 32 = 26).
  EXPECT_EQ(out[0], 7 * 0.333251953125f * 5 - 0.0f);
  EXPECT_EQ(out[256], -2.0f * 7 * 5);
  EXPECT_EQ(out[511], -3061.0f);  // (-2 * 58) * 26 - 1 * 45
}

// Each of the 5 bits of every element is read from its documented place:
// setting exactly one bit of one element changes exactly that element.
TEST(Q5_K, EveryBitMovesOnlyItsElement) {
  BlockQ5_K base;
  std::memset(&base, 0, sizeof(base));
  base.d = 0x3c00;                                  // 1.0
  std::memset(base.scales, 0, 12);                  // sc = 1 and m = 0 for every sub-block:
  for (int j = 0; j < 4; ++j) base.scales[j] = 1;   // sc[0..3] low bits
  for (int j = 8; j < 12; ++j) base.scales[j] = 1;  // sc[4..7] low nibbles
  for (int e = 0; e < 256; ++e) {
    for (int bit = 0; bit < 5; ++bit) {
      BlockQ5_K b = base;
      place_level(b, e, 1 << bit);
      float out[256];
      dequantize_row_q5_k(&b, out, 256);
      for (int k = 0; k < 256; ++k) {
        ASSERT_EQ(out[k], k == e ? float(1 << bit) : 0.0f)
            << "element " << e << " bit " << bit << " showed up at " << k;
      }
    }
  }
}

}  // namespace formats_q5_k_test
}  // namespace kvforge
