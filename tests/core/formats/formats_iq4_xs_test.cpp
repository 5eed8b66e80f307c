#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_xs.h"
#include "core/kernels/iq4_xs_scales.h"
#include "formats_test_util.h"

namespace kvforge {
namespace formats_iq4_xs_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

// 6-bit sub-block scales ls[j]: both extremes (factors -32 and 31), zero
// (ls 32), factors of both signs, and each of the four values of the two
// high bits that live in scales_h.
constexpr int kLs[8] = {0, 63, 32, 17, 45, 8, 31, 33};
// Packed by hand from the layout in iq4_xs.h:
//   scales_l[i] = (ls[2i] & 15) | (ls[2i+1] & 15) << 4:
//     0|15<<4 = 0xf0, 0|1<<4 = 0x10, 13|8<<4 = 0x8d, 15|1<<4 = 0x1f
//   scales_h = sum_j (ls[j] >> 4) << 2j, high parts 0 3 2 1 2 0 1 2:
//     3<<2 + 2<<4 + 1<<6 + 2<<8 + 1<<12 + 2<<14 = 12 + 32 + 64 + 512 + 4096 + 32768
constexpr uint8_t kScalesL[4] = {0xf0, 0x10, 0x8d, 0x1f};
constexpr uint16_t kScalesH = 37484;   // 0x926c
constexpr float kD = 0.333251953125f;  // half 0x3555

// The codebook index stored for element e: within each sub-block's low
// nibbles (l < 16) and high nibbles alike, all 16 indices occur.
int index_of(int e) { return (e * 7 + 3) % 16; }

// Places index k of element e by the nibble positions spelled out in
// iq4_xs.h, element by element.
void place_index(BlockIQ4_XS& b, int e, int k) {
  const int j = e / 32, i = e % 32;
  uint8_t& byte = b.qs[16 * j + i % 16];
  byte = i < 16 ? uint8_t((byte & 0xf0) | k) : uint8_t((byte & 0x0f) | k << 4);
}

BlockIQ4_XS hand_built_block() {
  BlockIQ4_XS b;
  std::memset(&b, 0, sizeof(b));
  b.d = 0x3555;
  b.scales_h = kScalesH;
  std::memcpy(b.scales_l, kScalesL, 4);
  for (int e = 0; e < 256; ++e) place_index(b, e, index_of(e));
  return b;
}

TEST(IQ4_XS, BlockLayout) {
  EXPECT_EQ(offsetof(BlockIQ4_XS, d), 0u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, scales_h), 2u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, scales_l), 4u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, qs), 8u);
}

TEST(IQ4_XS, CodebookIsThePublishedOne) {
  const int want[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int k = 0; k < 16; ++k) EXPECT_EQ(kIq4Codebook[k], want[k]) << "index " << k;
}

TEST(IQ4_XS, UnpacksAllEightScales) {
  const BlockIQ4_XS b = hand_built_block();
  for (int j = 0; j < 8; ++j) EXPECT_EQ(iq4_xs_scale(b, j), kLs[j]) << "sub-block " << j;
}

// The SIMD kernels' word-operation unpacking (kernels/iq4_xs_scales.h) gives
// byte j = ls[j] for every value of scales_h and every nibble in scales_l.
TEST(IQ4_XS, WordUnpackingMatchesTheFieldDefinition) {
  BlockIQ4_XS b = hand_built_block();
  uint64_t want = 0;
  for (int j = 0; j < 8; ++j) want |= uint64_t(kLs[j]) << (8 * j);
  EXPECT_EQ(iq4_xs_unpack_scale_bytes(b), want);
  for (uint32_t h = 0; h < 65536; ++h) {
    b.scales_h = uint16_t(h);
    for (int i = 0; i < 4; ++i) b.scales_l[i] = uint8_t(h * 37 + 91 * i);
    const uint64_t bytes = iq4_xs_unpack_scale_bytes(b);
    for (int j = 0; j < 8; ++j) {
      ASSERT_EQ(int((bytes >> (8 * j)) & 0xff), iq4_xs_scale(b, j))
          << "scales_h " << h << " j " << j;
    }
  }
}

// x = (d * (ls[j] - 32)) * codebook[k], two f32 roundings in that order; the
// second block has a negative super-scale and must use its own.
TEST(IQ4_XS, DequantizesHandBuiltBlockBitExactly) {
  BlockIQ4_XS blocks[2] = {hand_built_block(), hand_built_block()};
  blocks[1].d = 0xb800;  // -0.5
  float out[512];
  dequantize_row_iq4_xs(blocks, out, 512);
  for (int e = 0; e < 256; ++e) {
    const float dl = kD * float(kLs[e / 32] - 32);
    const float want = dl * float(kIq4Codebook[index_of(e)]);
    ASSERT_EQ(testing::float_bits(out[e]), testing::float_bits(want)) << "element " << e;
    ASSERT_EQ(out[256 + e], -0.5f * float(kLs[e / 32] - 32) * float(kIq4Codebook[index_of(e)]))
        << "second block, element " << e;
  }
  // Worked out by hand: element 0 is index 3 (-65) in sub-block 0 (factor
  // -32); element 255 is index (255 * 7 + 3) % 16 = 12 (53) in sub-block 7
  // (factor 1); elements 64..95 have factor 0.
  EXPECT_EQ(out[256], -0.5f * -32 * -65);  // -1040
  EXPECT_EQ(out[511], -26.5f);
  EXPECT_EQ(out[0], (0.333251953125f * -32) * -65);
  for (int e = 64; e < 96; ++e) EXPECT_EQ(out[e], 0.0f) << "element " << e;
}

// Every element's 4 bits are read from its documented nibble: giving one
// element each index in turn changes exactly that element, to that level.
TEST(IQ4_XS, EveryNibbleMovesOnlyItsElement) {
  BlockIQ4_XS base;
  std::memset(&base, 0, sizeof(base));
  base.d = 0x3c00;                              // 1.0
  std::memset(base.scales_l, 0x11, 4);          // ls = 33 (factor 1) everywhere:
  base.scales_h = 0xaaaa;                       // high parts 2
  std::memset(base.qs, 0x88, sizeof(base.qs));  // index 8: level 1
  for (int e = 0; e < 256; ++e) {
    for (int k : {0, 5, 7, 9, 15}) {
      BlockIQ4_XS b = base;
      place_index(b, e, k);
      float out[256];
      dequantize_row_iq4_xs(&b, out, 256);
      for (int i = 0; i < 256; ++i) {
        ASSERT_EQ(out[i], i == e ? float(kIq4Codebook[k]) : 1.0f)
            << "element " << e << " index " << k << " showed up at " << i;
      }
    }
  }
}

}  // namespace formats_iq4_xs_test
}  // namespace kvforge
