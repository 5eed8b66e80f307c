#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/q6_k.h"
#include "formats_test_util.h"

namespace kvforge {
namespace formats_q6_k_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

// All 16 scales distinct, both signs, both int8 extremes.
constexpr int8_t kScales[16] = {1, -1, 7, -128, 127, 33, -45, 2, 100, -3, 64, 19, -77, 5, 88, -20};
constexpr float kD = 0.333251953125f;  // half 0x3555

int quant_of(int e) { return (e * 5 + 11) % 64; }  // 6-bit value stored for element e

// Places quant q of element e by the bit positions spelled out in q6_k.h,
// element by element (not the way the library packs whole groups).
void place_quant(BlockQ6_K& b, int e, int q) {
  const int half = e / 128, i = e % 128;
  const int quarter = i / 32, l = i % 32;
  uint8_t& low_byte = b.ql[64 * half + l + 32 * (quarter % 2)];
  if (quarter < 2) {
    low_byte = uint8_t((low_byte & 0xf0) | (q & 15));
  } else {
    low_byte = uint8_t((low_byte & 0x0f) | (q & 15) << 4);
  }
  uint8_t& high_byte = b.qh[32 * half + l];
  high_byte = uint8_t((high_byte & ~(3 << (2 * quarter))) | (q >> 4) << (2 * quarter));
}

BlockQ6_K hand_built_block() {
  BlockQ6_K b;
  std::memset(&b, 0, sizeof(b));
  b.d = 0x3555;
  std::memcpy(b.scales, kScales, 16);
  for (int e = 0; e < 256; ++e) place_quant(b, e, quant_of(e));
  return b;
}

TEST(Q6_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ6_K, ql), 0u);
  EXPECT_EQ(offsetof(BlockQ6_K, qh), 128u);
  EXPECT_EQ(offsetof(BlockQ6_K, scales), 192u);
  EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);
}

// x = (d * scales[e/16]) * (q - 32), two f32 roundings in that order.
TEST(Q6_K, DequantizesHandBuiltBlockBitExactly) {
  BlockQ6_K blocks[2] = {hand_built_block(), hand_built_block()};
  blocks[1].d = 0xb800;  // -0.5
  float out[512];
  dequantize_row_q6_k(blocks, out, 512);
  for (int e = 0; e < 256; ++e) {
    const float scaled = kD * float(kScales[e / 16]);
    const float want = scaled * float(quant_of(e) - 32);
    ASSERT_EQ(testing::float_bits(out[e]), testing::float_bits(want)) << "element " << e;
    ASSERT_EQ(out[256 + e], -0.5f * float(kScales[e / 16]) * float(quant_of(e) - 32))
        << "second block, element " << e;
  }
}

// Each of the 6 bits of every element is read from its documented place:
// setting exactly one bit of one byte changes exactly the element it belongs to.
TEST(Q6_K, EveryBitMovesOnlyItsElement) {
  BlockQ6_K base;
  std::memset(&base, 0, sizeof(base));
  base.d = 0x3c00;  // 1.0
  for (int8_t& s : base.scales) s = 1;
  float ref[256];
  dequantize_row_q6_k(&base, ref, 256);
  for (int e = 0; e < 256; ++e) ASSERT_EQ(ref[e], -32.0f);
  for (int e = 0; e < 256; ++e) {
    for (int bit = 0; bit < 6; ++bit) {
      BlockQ6_K b = base;
      place_quant(b, e, 1 << bit);
      float out[256];
      dequantize_row_q6_k(&b, out, 256);
      for (int k = 0; k < 256; ++k) {
        ASSERT_EQ(out[k], k == e ? float((1 << bit) - 32) : -32.0f)
            << "element " << e << " bit " << bit << " showed up at " << k;
      }
    }
  }
}

}  // namespace formats_q6_k_test
}  // namespace kvforge
