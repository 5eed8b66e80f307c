#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>

#include "core/formats/q3_k.h"
#include "core/kernels/q3_k_scales.h"
#include "formats_test_util.h"

namespace kvforge {
namespace formats_q3_k_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

// Stored 6-bit scales (scale = sc - 32): both extremes 0 and 63 (scales -32
// and +31), 31 and 32 (scales -1 and 0), every value of the top two bits at
// every position of their byte, and every low nibble from 0 to 15 at least once.
constexpr int kSc[16] = {0, 63, 32, 31, 1, 62, 17, 46, 5, 58, 33, 30, 16, 47, 40, 23};
// Packed by hand from the layout in q3_k.h:
//   bytes 0-7  = low4(sc[j]) | low4(sc[j+8]) << 4:
//     0|5<<4, 15|10<<4, 0|1<<4, 15|14<<4, 1|0<<4, 14|15<<4, 1|8<<4, 14|7<<4
//   bytes 8-11 = top2(sc[i]) | top2(sc[i+4]) << 2 | top2(sc[i+8]) << 4 | top2(sc[i+12]) << 6:
//     0|0<<2|0<<4|1<<6, 3|3<<2|3<<4|2<<6, 2|1<<2|2<<4|2<<6, 1|2<<2|1<<4|1<<6
constexpr uint8_t kPackedScales[12] = {0x50, 0xaf, 0x10, 0xef, 0x01, 0xfe,
                                       0x81, 0x7e, 0x40, 0xbf, 0xa6, 0x59};
constexpr float kD = 0.333251953125f;  // half 0x3555

// Element e's stored 3-bit value u = low | high << 2 (quant u - 4): each
// sub-block of 16 holds every value 0..7 twice at shifting places, so the
// high bit is set and clear, with every low value, at every bit position.
int stored_of(int e) { return (e + e / 16) % 8; }

// Places stored value u of element e by the bit positions spelled out in
// q3_k.h, element by element (not the way the library packs whole blocks).
void place_quant(BlockQ3_K& b, int e, int u) {
  const int half = e / 128, pair = (e % 128) / 32, l = e % 32;
  uint8_t& low = b.qs[32 * half + l];
  low = uint8_t((low & ~(3 << (2 * pair))) | (u & 3) << (2 * pair));
  const int bit = e / 32;
  b.hmask[l] = uint8_t((b.hmask[l] & ~(1 << bit)) | (u >> 2) << bit);
}

BlockQ3_K hand_built_block(uint16_t d) {
  BlockQ3_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = d;
  std::memcpy(b.scales, kPackedScales, 12);
  for (int e = 0; e < 256; ++e) place_quant(b, e, stored_of(e));
  return b;
}

TEST(Q3_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ3_K, hmask), 0u);
  EXPECT_EQ(offsetof(BlockQ3_K, qs), 32u);
  EXPECT_EQ(offsetof(BlockQ3_K, scales), 96u);
  EXPECT_EQ(offsetof(BlockQ3_K, d), 108u);
}

// The format's field reader and the kernels' word-wise unpacking
// (kernels/q3_k_scales.h) both give the hand-packed values back.
TEST(Q3_K, UnpacksAllSixteenScales) {
  uint8_t unpacked[16];
  q3_k_unpack_scales(kPackedScales, unpacked);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(q3_k_scale(kPackedScales, j), kSc[j]) << "sub-block " << j;
    EXPECT_EQ(unpacked[j], kSc[j]) << "sub-block " << j;
  }
}

TEST(Q3_K, WordUnpackingMatchesTheFieldReaderOnRandomBytes) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 1000; ++trial) {
    uint8_t packed[12];
    for (uint8_t& byte : packed) byte = uint8_t(rng());
    uint8_t unpacked[16];
    q3_k_unpack_scales(packed, unpacked);
    for (int j = 0; j < 16; ++j) ASSERT_EQ(unpacked[j], q3_k_scale(packed, j)) << "trial " << trial;
  }
}

// x = (d * (sc[j] - 32)) * (u - 4), two f32 roundings in that order, for a
// positive and a negative super-scale.
TEST(Q3_K, DequantizesHandBuiltBlocksBitExactly) {
  BlockQ3_K blocks[2] = {hand_built_block(0x3555), hand_built_block(0xb800)};  // kD, -0.5
  const float ds[2] = {kD, -0.5f};
  float out[512];
  dequantize_row_q3_k(blocks, out, 512);
  for (int blk = 0; blk < 2; ++blk) {
    for (int e = 0; e < 256; ++e) {
      const float scaled = ds[blk] * float(kSc[e / 16] - 32);
      const float want = scaled * float(stored_of(e) - 4);
      ASSERT_EQ(testing::float_bits(out[256 * blk + e]), testing::float_bits(want))
          << "block " << blk << " element " << e;
    }
  }
}

// Each of the 3 bits of every element, high bit set and clear, is read from
// its documented place: changing exactly one bit changes exactly its element.
TEST(Q3_K, EveryBitMovesOnlyItsElement) {
  BlockQ3_K base;
  std::memset(&base, 0, sizeof(base));
  base.d = 0x3c00;                                     // 1.0
  for (int j = 0; j < 8; ++j) base.scales[j] = 0x11;   // low nibbles 1: sc = 33, scale 1
  for (int i = 8; i < 12; ++i) base.scales[i] = 0xaa;  // top bits 2 everywhere
  for (int e = 0; e < 256; ++e) ASSERT_EQ(q3_k_scale(base.scales, e / 16), 33);
  for (int high = 0; high < 2; ++high) {
    BlockQ3_K ground = base;
    if (high) std::memset(ground.hmask, 0xff, sizeof(ground.hmask));
    const float rest = high ? 0.0f : -4.0f;
    float ref[256];
    dequantize_row_q3_k(&ground, ref, 256);
    for (int e = 0; e < 256; ++e) ASSERT_EQ(ref[e], rest);
    for (int e = 0; e < 256; ++e) {
      for (int bit = 0; bit < 3; ++bit) {
        BlockQ3_K b = ground;
        const int u = (high ? 4 : 0) ^ (1 << bit);  // flip one bit of u
        place_quant(b, e, u);
        float out[256];
        dequantize_row_q3_k(&b, out, 256);
        for (int k = 0; k < 256; ++k) {
          ASSERT_EQ(out[k], k == e ? float(u - 4) : rest)
              << "element " << e << " bit " << bit << " high " << high << " showed up at " << k;
        }
      }
    }
  }
}

}  // namespace formats_q3_k_test
}  // namespace kvforge
