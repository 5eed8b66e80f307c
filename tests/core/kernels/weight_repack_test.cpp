// Q4_0 and Q8_0 rows regrouped for the AVX-512 kernels
// (kernels/weight_repack.h): the layouts are the ones WeightLayout documents,
// the kernels' products are bitwise those of the native layout, and the
// levels that cannot read them say so.
#include "core/kernels/weight_repack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/formats/iq4_xs.h"
#include "core/formats/q2_k.h"
#include "core/formats/q3_k.h"
#include "core/formats/q4_0.h"
#include "core/formats/q4_k.h"
#include "core/formats/q8_0.h"
#include "core/threadpool.h"
#include "simd_levels.h"

namespace kvforge {
namespace weight_repack_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

std::vector<uint8_t> random_rows(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * cols));
  for (float& v : x) v = dist(rng);
  const size_t block_bytes = type == GgmlType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  std::vector<uint8_t> bytes(size_t(rows * cols / 32) * block_bytes);
  if (type == GgmlType::Q4_0)
    quantize_row_q4_0(x.data(), reinterpret_cast<BlockQ4_0*>(bytes.data()), rows * cols);
  else
    quantize_row_q8_0(x.data(), reinterpret_cast<BlockQ8_0*>(bytes.data()), rows * cols);
  return bytes;
}

using LevelGuard = testing::SimdLevelGuard;

TEST(WeightRepack, Q4_0Groups8HoldsEachGroupsScalesThenItsNibbles) {
  const int64_t rows = 3, cols = 512;  // 16 blocks per row: 2 groups
  const std::vector<uint8_t> native = random_rows(GgmlType::Q4_0, rows, cols, 1);
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q4_0Groups8, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ4_0*>(native.data());
  for (int64_t b = 0; b < rows * cols / 32; ++b) {
    const uint8_t* group = packed.data() + (b / 8) * 144;  // 8 blocks x 18 bytes
    uint16_t d;
    std::memcpy(&d, group + 2 * (b % 8), 2);
    EXPECT_EQ(d, blocks[b].d) << "block " << b;
    EXPECT_EQ(0, std::memcmp(group + 16 + 16 * (b % 8), blocks[b].qs, 16)) << "block " << b;
  }
}

TEST(WeightRepack, Q8_0Groups8HoldsEachGroupsScalesThenQuadHalvesOffsetBy128) {
  const int64_t rows = 2, cols = 768;  // 24 blocks per row: 3 groups
  const std::vector<uint8_t> native = random_rows(GgmlType::Q8_0, rows, cols, 2);
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q8_0Groups8, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(native.data());
  for (int64_t b = 0; b < rows * cols / 32; ++b) {
    const uint8_t* group = packed.data() + (b / 8) * 272;  // 8 blocks x 34 bytes
    uint16_t d;
    std::memcpy(&d, group + 2 * (b % 8), 2);
    EXPECT_EQ(d, blocks[b].d) << "block " << b;
    const uint8_t* quad = group + 16 + 128 * ((b % 8) / 4);
    for (int i = 0; i < 32; ++i) {
      const uint8_t stored = quad[(i < 16 ? 0 : 64) + 16 * (b % 4) + i % 16];
      ASSERT_EQ(int(stored), int(blocks[b].qs[i]) + 128) << "block " << b << " element " << i;
    }
  }
}

TEST(WeightRepack, Q8_0Tiles16InterleavesEachBlocksSixteenRowsThenHoldsTheirScales) {
  const int64_t rows = 32, cols = 96;  // 2 groups of 16 rows, 3 blocks per row
  const std::vector<uint8_t> native = random_rows(GgmlType::Q8_0, rows, cols, 4);
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q8_0Tiles16, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(native.data());
  const int64_t nb = cols / 32;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* group = packed.data() + (r / 16) * 16 * nb * 34;
    const int64_t n = r % 16;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ8_0& blk = blocks[r * nb + b];
      uint16_t d;
      std::memcpy(&d, group + 512 * nb + 32 * b + 2 * n, 2);
      EXPECT_EQ(d, blk.d) << "row " << r << " block " << b;
      for (int i = 0; i < 32; ++i) {
        const uint8_t stored = group[512 * b + 64 * (i / 4) + 4 * n + i % 4];
        ASSERT_EQ(int(stored), int(blk.qs[i]) + 128) << "row " << r << " block " << b << " " << i;
      }
    }
  }
}

TEST(WeightRepack, Q4_0Tiles16InterleavesEachBlocksNibbleBytesThenHoldsTheirScales) {
  const int64_t rows = 32, cols = 96;  // 2 groups of 16 rows, 3 blocks per row
  const std::vector<uint8_t> native = random_rows(GgmlType::Q4_0, rows, cols, 5);
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q4_0Tiles16, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ4_0*>(native.data());
  const int64_t nb = cols / 32;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* group = packed.data() + (r / 16) * 16 * nb * 18;
    const int64_t n = r % 16;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ4_0& blk = blocks[r * nb + b];
      uint16_t d;
      std::memcpy(&d, group + 256 * nb + 32 * b + 2 * n, 2);
      EXPECT_EQ(d, blk.d) << "row " << r << " block " << b;
      // Quant i (< 16) is the low nibble of byte i, quant 16 + i its high nibble.
      for (int i = 0; i < 16; ++i) {
        const uint8_t stored = group[256 * b + 64 * (i / 4) + 4 * n + i % 4];
        ASSERT_EQ(int(stored), int(blk.qs[i])) << "row " << r << " block " << b << " " << i;
      }
    }
  }
}

TEST(WeightRepack, Q4_KTiles16InterleavesNibbleAndScaleBytesThenHoldsTheSuperScales) {
  const int64_t rows = 32, cols = 512;  // 2 groups of 16 rows, 2 super-blocks per row
  std::vector<uint8_t> native(size_t(rows * cols / 256) * sizeof(BlockQ4_K));
  std::mt19937 rng(6);
  for (uint8_t& byte : native) byte = uint8_t(rng());  // a layout test: any bytes
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q4_KTiles16, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ4_K*>(native.data());
  const int64_t nb = cols / 256;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r % 16;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ4_K& blk = blocks[r * nb + b];
      const uint8_t* tile = packed.data() + ((r / 16) * nb + b) * 16 * 144;  // 2304 bytes
      uint16_t d, dmin;
      std::memcpy(&d, tile + 2240 + 2 * n, 2);
      std::memcpy(&dmin, tile + 2272 + 2 * n, 2);
      EXPECT_EQ(d, blk.d) << "row " << r << " block " << b;
      EXPECT_EQ(dmin, blk.dmin) << "row " << r << " block " << b;
      for (int i = 0; i < 128; ++i)
        ASSERT_EQ(tile[64 * (i / 4) + 4 * n + i % 4], blk.qs[i]) << "row " << r << " qs " << i;
      for (int i = 0; i < 12; ++i)
        ASSERT_EQ(tile[2048 + 64 * (i / 4) + 4 * n + i % 4], blk.scales[i])
            << "row " << r << " scale byte " << i;
    }
  }
}

TEST(WeightRepack, Q2_KTiles16InterleavesScaleAndQsBytesThenHoldsTheSuperScales) {
  const int64_t rows = 48, cols = 768;  // 3 groups of 16 rows, 3 super-blocks per row
  std::vector<uint8_t> native(size_t(rows * cols / 256) * sizeof(BlockQ2_K));
  std::mt19937 rng(8);
  for (uint8_t& byte : native) byte = uint8_t(rng());  // a layout test: any bytes
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q2_KTiles16, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ2_K*>(native.data());
  const int64_t nb = cols / 256;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r % 16;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ2_K& blk = blocks[r * nb + b];
      const uint8_t* tile = packed.data() + ((r / 16) * nb + b) * 16 * 84;  // 1344 bytes
      uint16_t d, dmin;
      std::memcpy(&d, tile + 1280 + 2 * n, 2);
      std::memcpy(&dmin, tile + 1312 + 2 * n, 2);
      EXPECT_EQ(d, blk.d) << "row " << r << " block " << b;
      EXPECT_EQ(dmin, blk.dmin) << "row " << r << " block " << b;
      for (int i = 0; i < 16; ++i)
        ASSERT_EQ(tile[64 * (i / 4) + 4 * n + i % 4], blk.scales[i])
            << "row " << r << " scale byte " << i;
      for (int i = 0; i < 64; ++i)
        ASSERT_EQ(tile[256 + 64 * (i / 4) + 4 * n + i % 4], blk.qs[i])
            << "row " << r << " qs " << i;
    }
  }
}

TEST(WeightRepack, Q3_KTiles16KeepsEachTilesLinesInReadingOrderAndTheDAfterAllTiles) {
  const int64_t rows = 48, cols = 768;  // 3 groups of 16 rows, 3 super-blocks per row
  std::vector<uint8_t> native(size_t(rows * cols / 256) * sizeof(BlockQ3_K));
  std::mt19937 rng(8);
  for (uint8_t& byte : native) byte = uint8_t(rng());  // a layout test: any bytes
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::Q3_KTiles16, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ3_K*>(native.data());
  const int64_t nb = cols / 256, tiles = rows / 16 * nb;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r % 16;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ3_K& blk = blocks[r * nb + b];
      const int64_t t = (r / 16) * nb + b;
      const uint8_t* tile = packed.data() + t * 16 * 108;  // 1728 bytes = 27 lines
      uint16_t d;
      std::memcpy(&d, packed.data() + tiles * 1728 + 32 * t + 2 * n, 2);
      EXPECT_EQ(d, blk.d) << "row " << r << " block " << b;
      for (int i = 0; i < 32; ++i) {
        const int c = i / 4, j = i % 4;
        ASSERT_EQ(tile[128 * c + 4 * n + j], blk.qs[i]) << "row " << r << " qs " << i;
        ASSERT_EQ(tile[128 * c + 64 + 4 * n + j], blk.hmask[i]) << "row " << r << " hmask " << i;
        ASSERT_EQ(tile[1024 + 64 * c + 4 * n + j], blk.qs[32 + i])
            << "row " << r << " qs " << 32 + i;
      }
      for (int i = 0; i < 12; ++i)
        ASSERT_EQ(tile[1536 + 64 * (i / 4) + 4 * n + i % 4], blk.scales[i])
            << "row " << r << " scale byte " << i;
    }
  }
}

TEST(WeightRepack, IQ4_XSTiles16HoldsScalesAndSuperScalesThenInterleavedNibbleBytes) {
  const int64_t rows = 32, cols = 512;  // 2 groups of 16 rows, 2 super-blocks per row
  std::vector<uint8_t> native(size_t(rows * cols / 256) * sizeof(BlockIQ4_XS));
  std::mt19937 rng(7);
  for (uint8_t& byte : native) byte = uint8_t(rng());  // a layout test: any bytes
  std::vector<uint8_t> packed(native.size());
  regroup_rows(WeightLayout::IQ4_XSTiles16, native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(native.data());
  const int64_t nb = cols / 256;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r % 16;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockIQ4_XS& blk = blocks[r * nb + b];
      const uint8_t* tile = packed.data() + ((r / 16) * nb + b) * 16 * 136;  // 2176 bytes
      uint16_t scales_h, d;
      std::memcpy(&scales_h, tile + 64 + 2 * n, 2);
      std::memcpy(&d, tile + 96 + 2 * n, 2);
      EXPECT_EQ(scales_h, blk.scales_h) << "row " << r << " block " << b;
      EXPECT_EQ(d, blk.d) << "row " << r << " block " << b;
      EXPECT_EQ(0, std::memcmp(tile + 4 * n, blk.scales_l, 4)) << "row " << r << " block " << b;
      for (int i = 0; i < 128; ++i)
        ASSERT_EQ(tile[128 + 64 * (i / 4) + 4 * n + i % 4], blk.qs[i])
            << "row " << r << " qs " << i;
    }
  }
}

TEST(WeightRepack, IQ4_XSTiles16FitsWholeGroupsAndSuperBlocks) {
  EXPECT_EQ(regrouped_layout(GgmlType::IQ4_XS, 2048, 768), WeightLayout::IQ4_XSTiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::IQ4_XS, 32001, 768), WeightLayout::Native);
  EXPECT_FALSE(layout_fits(WeightLayout::IQ4_XSTiles16, 16, 288));
  EXPECT_FALSE(layout_fits(WeightLayout::IQ4_XSTiles16, 8, 256));
  EXPECT_TRUE(layout_fits(WeightLayout::IQ4_XSTiles16, 16, 256));
  EXPECT_EQ(layout_type(WeightLayout::IQ4_XSTiles16), GgmlType::IQ4_XS);
  EXPECT_STREQ(layout_name(WeightLayout::IQ4_XSTiles16), "IQ4_XSTiles16");
  EXPECT_TRUE(layout_keeps_results(WeightLayout::IQ4_XSTiles16));
}

TEST(WeightRepack, Interleaved16PutsEachColumnsSixteenRowsSideBySide) {
  const int64_t rows = 32, cols = 7;  // 2 groups; any number of columns
  std::vector<uint16_t> native(size_t(rows * cols));
  for (size_t i = 0; i < native.size(); ++i) native[i] = uint16_t(0x3c00 + i);  // distinct
  for (WeightLayout layout : {WeightLayout::F16Interleaved16, WeightLayout::BF16Interleaved16}) {
    std::vector<uint16_t> packed(native.size());
    regroup_rows(layout, native.data(), rows, cols, packed.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        // Byte 32k + 2n of group r / 16, with n = r % 16.
        const size_t at = size_t((r / 16) * 16 * cols + 16 * k + r % 16);
        ASSERT_EQ(packed[at], native[size_t(r * cols + k)])
            << layout_name(layout) << " row " << r << " col " << k;
      }
  }
}

// The 32-element block types' tiles: nibble bytes interleaved 4 by 4, the
// 5-bit types' fifth bits 8 to a byte (bit k: element 4k + j, bit 4 + k:
// element 16 + 4k + j), then per block the 16 d (and m; MXFP4: the 16 e bytes).
TEST(WeightRepack, Block32Tiles16HoldNibblesFifthBitsThenScales) {
  const int64_t rows = 32, cols = 96;  // 2 groups of 3 blocks
  std::mt19937 rng(12);
  for (WeightLayout layout :
       {WeightLayout::IQ4_NLTiles16, WeightLayout::Q5_0Tiles16, WeightLayout::Q5_1Tiles16,
        WeightLayout::Q4_1Tiles16, WeightLayout::MXFP4Tiles16}) {
    const GgmlType type = layout_type(layout);
    const bool fifth = type == GgmlType::Q5_0 || type == GgmlType::Q5_1;
    const bool min = type == GgmlType::Q5_1 || type == GgmlType::Q4_1;
    const size_t block = type_traits(type).block_bytes;  // d, [m], [qh], qs
    std::vector<uint8_t> native(size_t(rows * cols / 32) * block);
    for (uint8_t& b : native) b = uint8_t(rng());
    std::vector<uint8_t> packed(native.size());
    regroup_rows(layout, native.data(), rows, cols, packed.data());
    const int64_t blocks = cols / 32, quant_bytes = fifth ? 320 : 256;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* in = native.data() + size_t(r * blocks + b) * block;
        const uint8_t* qs = in + block - 16;
        const uint8_t* group = packed.data() + size_t((r / 16) * 16 * blocks) * block;
        const int64_t n = r % 16;
        for (int i = 0; i < 16; ++i)
          ASSERT_EQ(group[quant_bytes * b + 64 * (i / 4) + 4 * n + i % 4], qs[i])
              << layout_name(layout) << " row " << r << " block " << b << " byte " << i;
        if (fifth) {
          uint32_t qh;
          std::memcpy(&qh, in + (min ? 4 : 2), 4);
          for (int e = 0; e < 32; ++e) {
            const int j = e % 4, bit = e < 16 ? e / 4 : 4 + (e - 16) / 4;
            const uint8_t stored = group[quant_bytes * b + 256 + 4 * n + j];
            ASSERT_EQ((stored >> bit) & 1, (qh >> e) & 1)
                << layout_name(layout) << " row " << r << " block " << b << " element " << e;
          }
        }
        if (type == GgmlType::MXFP4) {  // one E8M0 byte per row
          EXPECT_EQ(group[quant_bytes * blocks + 16 * b + n], in[0]) << layout_name(layout) << " e";
          continue;
        }
        const uint8_t* scales = group + quant_bytes * blocks + (min ? 64 : 32) * b;
        EXPECT_EQ(0, std::memcmp(scales + 2 * n, in, 2)) << layout_name(layout) << " d";
        if (min) {
          EXPECT_EQ(0, std::memcmp(scales + 32 + 2 * n, in + 2, 2)) << layout_name(layout) << " m";
        }
      }
    EXPECT_TRUE(layout_keeps_results(layout));
    EXPECT_EQ(regrouped_layout(type, 2048, 768), layout);
    EXPECT_EQ(regrouped_layout(type, 2040, 768), WeightLayout::Native);
    EXPECT_TRUE(layout_fits(layout, 16, 32));
    EXPECT_FALSE(layout_fits(layout, 24, 768));
  }
}

TEST(WeightRepack, EachLayoutSaysWhichShapesFit) {
  EXPECT_TRUE(layout_fits(WeightLayout::Q4_0Groups8, 3, 256));
  EXPECT_TRUE(layout_fits(WeightLayout::Q8_0Groups8, 1, 11008));
  EXPECT_FALSE(layout_fits(WeightLayout::Q4_0Groups8, 4, 288));
  EXPECT_FALSE(layout_fits(WeightLayout::Q8_0Groups8, 4, 0));
  EXPECT_TRUE(layout_fits(WeightLayout::Q8_0Tiles16, 32000, 768));
  EXPECT_TRUE(layout_fits(WeightLayout::Q8_0Tiles16, 16, 32));
  EXPECT_FALSE(layout_fits(WeightLayout::Q8_0Tiles16, 24, 768));
  EXPECT_FALSE(layout_fits(WeightLayout::Q8_0Tiles16, 16, 48));
  EXPECT_EQ(layout_type(WeightLayout::Q8_0Tiles16), GgmlType::Q8_0);
  EXPECT_TRUE(layout_fits(WeightLayout::Q4_0Tiles16, 2048, 768));
  EXPECT_FALSE(layout_fits(WeightLayout::Q4_0Tiles16, 8, 768));
  EXPECT_EQ(layout_type(WeightLayout::Q4_0Tiles16), GgmlType::Q4_0);
  // Tiles16 whether or not the machine has AMX: its VNNI kernel is the faster one too.
  EXPECT_EQ(regrouped_layout(GgmlType::Q4_0, 2048, 768), WeightLayout::Q4_0Tiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::Q8_0, 32000, 768), WeightLayout::Q8_0Tiles16);
  // Rows that do not fill 16-row groups (a 32001-token vocabulary) fall back to Groups8,
  // and neither fitting leaves the rows as they are.
  EXPECT_EQ(regrouped_layout(GgmlType::Q4_0, 32001, 768), WeightLayout::Q4_0Groups8);
  EXPECT_EQ(regrouped_layout(GgmlType::Q8_0, 32001, 768), WeightLayout::Q8_0Groups8);
  EXPECT_EQ(regrouped_layout(GgmlType::Q8_0, 32001, 96), WeightLayout::Native);
  EXPECT_EQ(regrouped_layout(GgmlType::Q4_K, 256, 256), WeightLayout::Q4_KTiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::Q4_K, 248, 256), WeightLayout::Native);
  EXPECT_EQ(regrouped_layout(GgmlType::Q6_K, 256, 256), WeightLayout::Q6_KTiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::Q5_K, 256, 256), WeightLayout::Q5_KTiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::Q3_K, 256, 256), WeightLayout::Q3_KTiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::Q3_K, 248, 256), WeightLayout::Native);
  EXPECT_FALSE(layout_fits(WeightLayout::Q3_KTiles16, 16, 288));
  EXPECT_FALSE(layout_fits(WeightLayout::Q3_KTiles16, 0, 256));
  EXPECT_EQ(layout_type(WeightLayout::Q3_KTiles16), GgmlType::Q3_K);
  EXPECT_TRUE(layout_keeps_results(WeightLayout::Q3_KTiles16));
  EXPECT_EQ(regrouped_layout(GgmlType::Q2_K, 256, 768), WeightLayout::Q2_KTiles16);
  EXPECT_EQ(regrouped_layout(GgmlType::Q2_K, 40, 768), WeightLayout::Native);
  EXPECT_FALSE(layout_fits(WeightLayout::Q2_KTiles16, 16, 288));
  EXPECT_EQ(layout_type(WeightLayout::Q2_KTiles16), GgmlType::Q2_K);
  EXPECT_TRUE(layout_keeps_results(WeightLayout::Q2_KTiles16));
  EXPECT_FALSE(layout_fits(WeightLayout::Q4_KTiles16, 16, 288));
  EXPECT_EQ(layout_type(WeightLayout::Q4_KTiles16), GgmlType::Q4_K);
  EXPECT_TRUE(layout_keeps_results(WeightLayout::Q4_KTiles16));
  EXPECT_FALSE(layout_keeps_results(WeightLayout::Q4_0Tiles16));
  EXPECT_TRUE(layout_fits(WeightLayout::F16Interleaved16, 32000, 7));
  EXPECT_FALSE(layout_fits(WeightLayout::F16Interleaved16, 40, 768));
  EXPECT_FALSE(layout_fits(WeightLayout::F16Interleaved16, 16, 0));
  EXPECT_EQ(layout_type(WeightLayout::F16Interleaved16), GgmlType::F16);
  EXPECT_EQ(regrouped_layout(GgmlType::F16, 256, 256), WeightLayout::F16Interleaved16);
  EXPECT_EQ(regrouped_layout(GgmlType::F16, 32001, 768), WeightLayout::Native);
  EXPECT_EQ(regrouped_layout(GgmlType::F32, 256, 256), WeightLayout::Native);
  EXPECT_EQ(layout_type(WeightLayout::BF16Interleaved16), GgmlType::BF16);
  EXPECT_EQ(regrouped_layout(GgmlType::BF16, 256, 256), WeightLayout::BF16Interleaved16);
  EXPECT_EQ(regrouped_layout(GgmlType::BF16, 8, 256), WeightLayout::Native);
  std::vector<uint8_t> buf(9 * 18);
  try {
    regroup_rows(WeightLayout::Q4_0Groups8, buf.data(), 1, 288, buf.data());
    FAIL() << "288 columns accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("288"), std::string::npos) << e.what();
  }
  try {
    regroup_rows(WeightLayout::Q8_0Tiles16, buf.data(), 3, 32, buf.data());
    FAIL() << "3 rows accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Q8_0Tiles16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rows a multiple of 16 and cols of 32"), std::string::npos)
        << e.what();
  }
}

// The AVX-512 kernels on the regrouped rows give exactly the native kernels'
// bits, for decode (1-2 tokens: 4-row streams and single leftover rows),
// whole and partial 4 x 3 tiles, and threads splitting the rows anywhere.
TEST(WeightRepack, AvxKernelsOnRegroupedRowsAreBitwiseTheNativeLayouts) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ASSERT_TRUE(regrouping_preferred());
  MatmulScratch scratch;
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0}) {
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      for (int64_t rows : {1, 5, 37, 130}) {
        for (int64_t cols : {256, 768}) {
          const std::vector<uint8_t> native = random_rows(type, rows, cols, uint32_t(rows + cols));
          std::vector<uint8_t> packed(native.size());
          const WeightLayout layout =
              type == GgmlType::Q4_0 ? WeightLayout::Q4_0Groups8 : WeightLayout::Q8_0Groups8;
          regroup_rows(layout, native.data(), rows, cols, packed.data());
          const WeightView a{type, native.data(), rows, cols};
          const WeightView b{type, packed.data(), rows, cols, layout};
          for (int64_t n : {1, 2, 3, 4, 7, 16, 33}) {
            std::mt19937 rng{uint32_t(n)};
            std::normal_distribution<float> dist(0.0f, 1.0f);
            std::vector<float> x(size_t(n * cols));
            for (float& v : x) v = dist(rng);
            std::vector<float> ya(size_t(n * rows)), yb(size_t(n * rows), -1.0f);
            matmul(a, x.data(), n, ya.data(), pool, scratch);
            matmul(b, x.data(), n, yb.data(), pool, scratch);
            ASSERT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)))
                << type_name(type) << " rows " << rows << " cols " << cols << " tokens " << n
                << " threads " << threads;
          }
        }
      }
    }
  }
}

TEST(WeightRepack, LevelsWithoutTheKernelRefuseTheLayout) {
  LevelGuard guard;
  const int64_t rows = 2, cols = 256;
  const std::vector<uint8_t> packed = random_rows(GgmlType::Q4_0, rows, cols, 3);
  const WeightView w{GgmlType::Q4_0, packed.data(), rows, cols, WeightLayout::Q4_0Groups8};
  std::vector<float> x(size_t(cols), 1.0f);
  std::vector<float> y(static_cast<size_t>(rows));
  ThreadPool pool(1);
  MatmulScratch scratch;
  set_simd_level(SimdLevel::Scalar);
  EXPECT_FALSE(regrouping_preferred());
  try {
    matmul(w, x.data(), 1, y.data(), pool, scratch);
    FAIL() << "the scalar level read a regrouped weight";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("AVX-512"), std::string::npos) << e.what();
  }
  EXPECT_THROW(matmul_reference(w, x.data(), 1, y.data()), std::invalid_argument);
  const WeightView not_q4{GgmlType::Q8_0, packed.data(), rows, cols, WeightLayout::Q4_0Groups8};
  set_simd_level(SimdLevel::Avx512);  // the type mismatch is refused at any level
  EXPECT_THROW(matmul(not_q4, x.data(), 1, y.data(), pool, scratch), std::invalid_argument);
}

}  // namespace weight_repack_test
}  // namespace kvforge
