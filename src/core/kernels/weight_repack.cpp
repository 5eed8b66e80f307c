#include "core/kernels/weight_repack.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/cpu_features.h"
#include "core/enum_names.h"
#include "core/formats/iq4_nl.h"
#include "core/formats/iq4_xs.h"
#include "core/formats/mxfp4.h"
#include "core/formats/q2_k.h"
#include "core/formats/q3_k.h"
#include "core/formats/q4_0.h"
#include "core/formats/q4_1.h"
#include "core/formats/q4_k.h"
#include "core/formats/q5_0.h"
#include "core/formats/q5_1.h"
#include "core/formats/q5_k.h"
#include "core/formats/q6_k.h"
#include "core/formats/q8_0.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {

namespace {

constexpr int64_t kGroupBlocks = 8;
constexpr int64_t kScaleBytes = kGroupBlocks * sizeof(uint16_t);

void regroup_q4_0(const BlockQ4_0* blocks, uint8_t* out) {
  for (int64_t b = 0; b < kGroupBlocks; ++b) {
    std::memcpy(out + b * sizeof(uint16_t), &blocks[b].d, sizeof(uint16_t));
    std::memcpy(out + kScaleBytes + b * sizeof(blocks[b].qs), blocks[b].qs, sizeof(blocks[b].qs));
  }
}

void regroup_q8_0(const BlockQ8_0* blocks, uint8_t* out) {
  for (int64_t b = 0; b < kGroupBlocks; ++b) {
    std::memcpy(out + b * sizeof(uint16_t), &blocks[b].d, sizeof(uint16_t));
    // Quad b / 4, block b % 4: elements 0..15 to its lo half, 16..31 to hi.
    uint8_t* quad = out + kScaleBytes + (b / 4) * 128 + (b % 4) * 16;
    for (int i = 0; i < 16; ++i) {
      quad[i] = uint8_t(blocks[b].qs[i]) ^ 0x80;
      quad[64 + i] = uint8_t(blocks[b].qs[16 + i]) ^ 0x80;
    }
  }
}

// Group g of 16 rows (their blocks one after another in `in`, row stride
// `blocks`): per block the 16 rows' quant bytes interleaved 4 by 4 (byte
// 64k + 4n + j = quant byte 4k + j of row n, xor `flip`), then all the
// blocks' scales (WeightLayout::Q8_0Tiles16 with flip 0x80: 512 bytes per
// block; Q4_0Tiles16 with flip 0, the nibble bytes as stored: 256).
template <class Block>
void tile_group(const Block* in, int64_t blocks, uint8_t flip, uint8_t* out) {
  constexpr int kQuantBytes = int(sizeof(Block::qs));  // per row and block
  const int64_t group_quant_bytes = kTiles16Rows * kQuantBytes;
  uint8_t* scales = out + blocks * group_quant_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t n = 0; n < kTiles16Rows; ++n) {
      const Block& blk = in[n * blocks + b];
      std::memcpy(scales + kTiles16ScaleBytes * b + 2 * n, &blk.d, sizeof(uint16_t));
      for (int i = 0; i < kQuantBytes; ++i)
        out[group_quant_bytes * b + 64 * (i / 4) + 4 * n + i % 4] = uint8_t(blk.qs[i]) ^ flip;
    }
  }
}

// All rows / 16 groups of a Tiles16 matrix.
template <class Block>
void tile_rows(const void* src, int64_t rows, int64_t cols, uint8_t flip, uint8_t* out) {
  const auto* in = static_cast<const Block*>(src);
  const int64_t blocks = cols / 32;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    tile_group(in + g * kTiles16Rows * blocks, blocks, flip,
               out + g * kTiles16Rows * blocks * int64_t(sizeof(Block)));
}

// F16Interleaved16, BF16Interleaved16: group g's element (k, n) = row
// 16g + n, column k (2-byte values, copied as they are).
void interleave_rows(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  const auto* in = static_cast<const uint16_t*>(src);
  auto* dst = reinterpret_cast<uint16_t*>(out);
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    for (int64_t n = 0; n < kTiles16Rows; ++n) {
      const uint16_t* row = in + (g * kTiles16Rows + n) * cols;
      uint16_t* group = dst + g * kTiles16Rows * cols;
      for (int64_t k = 0; k < cols; ++k) group[k * kTiles16Rows + n] = row[k];
    }
}

// Q4_KTiles16, Q5_KTiles16 (WeightLayout, matmul.h): group g's super-block
// b holds the 16 rows' nibble bytes interleaved 4 by 4, for Q5_K their qh
// bytes likewise, their 12 scale bytes likewise, then their d and their dmin.
template <class Block>
void tile_rows_k(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  constexpr bool q5 = std::is_same_v<Block, BlockQ5_K>;
  constexpr int64_t tile_bytes = q5 ? kQ5_KTileBytes : kQ4_KTileBytes;
  constexpr int64_t scales = q5 ? kQ5_KTileScales : kQ4_KTileScales;
  constexpr int64_t d = q5 ? kQ5_KTileD : kQ4_KTileD, dmin = q5 ? kQ5_KTileDmin : kQ4_KTileDmin;
  const auto* in = static_cast<const Block*>(src);
  const int64_t blocks = cols / Block::kElems;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* t = out + (g * blocks + b) * tile_bytes;
      for (int64_t n = 0; n < kTiles16Rows; ++n) {
        const Block& blk = in[(g * kTiles16Rows + n) * blocks + b];
        for (int i = 0; i < 128; ++i) t[64 * (i / 4) + 4 * n + i % 4] = blk.qs[i];
        if constexpr (q5)
          for (int i = 0; i < 32; ++i) t[kQ5_KTileQh + 64 * (i / 4) + 4 * n + i % 4] = blk.qh[i];
        for (int i = 0; i < 12; ++i) t[scales + 64 * (i / 4) + 4 * n + i % 4] = blk.scales[i];
        std::memcpy(t + d + 2 * n, &blk.d, 2);
        std::memcpy(t + dmin + 2 * n, &blk.dmin, 2);
      }
    }
}

// Q6_KTiles16 (WeightLayout, matmul.h): per group and super-block a tile of
// the 16 rows' ql, qh and scale bytes in the kernel's reading order; all the
// tiles' d after the tiles.
void tile_rows_q6_k(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  const auto* in = static_cast<const BlockQ6_K*>(src);
  const int64_t blocks = cols / BlockQ6_K::kElems, tiles = rows / kTiles16Rows * blocks;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* t = out + (g * blocks + b) * kQ6_KTileBytes;
      uint8_t* d = out + tiles * kQ6_KTileBytes + (g * blocks + b) * 32;
      for (int64_t n = 0; n < kTiles16Rows; ++n) {
        const BlockQ6_K& blk = in[(g * kTiles16Rows + n) * blocks + b];
        for (int q = 0; q < 4; ++q)
          for (int c = 0; c < 4; ++c) {
            const int h = q / 2, s = q % 2;
            uint8_t* line = t + 768 * q + 192 * c + 4 * n;
            std::memcpy(line, blk.ql + 64 * h + 16 * s + 4 * c, 4);
            std::memcpy(line + 64, blk.ql + 64 * h + 32 + 16 * s + 4 * c, 4);
            std::memcpy(line + 128, blk.qh + 32 * h + 16 * s + 4 * c, 4);
          }
        for (int i = 0; i < 16; ++i)
          t[kQ6_KTileScales + 64 * (i / 4) + 4 * n + i % 4] = uint8_t(blk.scales[i]);
        std::memcpy(d + 2 * n, &blk.d, 2);
      }
    }
}

// IQ4_NLTiles16, Q5_0Tiles16, Q5_1Tiles16, Q4_1Tiles16, MXFP4Tiles16
// (WeightLayout, matmul.h): per group and block the 16 rows' nibble bytes
// interleaved 4 by 4, for the 5-bit types their fifth bits regrouped 8 to a
// byte, and after all blocks per block the rows' d (and m; MXFP4: e).
template <class Block>
void tile_rows_block32(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  constexpr bool fifth = requires(Block b) { b.qh; };
  constexpr bool min = requires(Block b) { b.m; };
  constexpr bool e8m0 = requires(Block b) { b.e; };
  constexpr int64_t quant_bytes = kBlock32TileNibbleBytes + (fifth ? kBlock32TileFifthBytes : 0);
  constexpr int64_t scale_bytes = e8m0 ? kTiles16E8M0Bytes : kTiles16ScaleBytes * (min ? 2 : 1);
  const auto* in = static_cast<const Block*>(src);
  const int64_t blocks = cols / 32;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g) {
    uint8_t* group = out + g * kTiles16Rows * blocks * int64_t(sizeof(Block));
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* q = group + b * quant_bytes;
      uint8_t* d = group + blocks * quant_bytes + b * scale_bytes;
      for (int64_t n = 0; n < kTiles16Rows; ++n) {
        const Block& blk = in[(g * kTiles16Rows + n) * blocks + b];
        for (int i = 0; i < 16; ++i) q[64 * (i / 4) + 4 * n + i % 4] = blk.qs[i];
        if constexpr (fifth) {
          uint32_t qh;
          std::memcpy(&qh, blk.qh, 4);
          for (int j = 0; j < 4; ++j) {
            uint8_t bits = 0;
            for (int k = 0; k < 4; ++k) {
              bits |= uint8_t(((qh >> (4 * k + j)) & 1) << k);
              bits |= uint8_t(((qh >> (16 + 4 * k + j)) & 1) << (4 + k));
            }
            q[kBlock32TileNibbleBytes + 4 * n + j] = bits;
          }
        }
        if constexpr (e8m0)
          d[n] = blk.e;
        else
          std::memcpy(d + 2 * n, &blk.d, 2);
        if constexpr (min) std::memcpy(d + kTiles16ScaleBytes + 2 * n, &blk.m, 2);
      }
    }
  }
}

// Q2_KTiles16 (WeightLayout, matmul.h): per group and super-block the 16
// rows' scale bytes, then their qs bytes, each interleaved 4 by 4, then
// their d and their dmin.
void tile_rows_q2_k(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  const auto* in = static_cast<const BlockQ2_K*>(src);
  const int64_t blocks = cols / BlockQ2_K::kElems;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* t = out + (g * blocks + b) * kQ2_KTileBytes;
      for (int64_t n = 0; n < kTiles16Rows; ++n) {
        const BlockQ2_K& blk = in[(g * kTiles16Rows + n) * blocks + b];
        for (int i = 0; i < 16; ++i) t[64 * (i / 4) + 4 * n + i % 4] = blk.scales[i];
        for (int i = 0; i < 64; ++i) t[kQ2_KTileQs + 64 * (i / 4) + 4 * n + i % 4] = blk.qs[i];
        std::memcpy(t + kQ2_KTileD + 2 * n, &blk.d, 2);
        std::memcpy(t + kQ2_KTileDmin + 2 * n, &blk.dmin, 2);
      }
    }
}

// Q3_KTiles16 (WeightLayout, matmul.h): per group and super-block a tile of
// the 16 rows' qs, hmask and scale bytes in the kernel's reading order; all
// the tiles' d after the tiles.
void tile_rows_q3_k(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  const auto* in = static_cast<const BlockQ3_K*>(src);
  const int64_t blocks = cols / BlockQ3_K::kElems, tiles = rows / kTiles16Rows * blocks;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* t = out + (g * blocks + b) * kQ3_KTileBytes;
      uint8_t* d = out + tiles * kQ3_KTileBytes + (g * blocks + b) * 32;
      for (int64_t n = 0; n < kTiles16Rows; ++n) {
        const BlockQ3_K& blk = in[(g * kTiles16Rows + n) * blocks + b];
        for (int c = 0; c < 8; ++c) {
          std::memcpy(t + 128 * c + 4 * n, blk.qs + 4 * c, 4);
          std::memcpy(t + 128 * c + 64 + 4 * n, blk.hmask + 4 * c, 4);
          std::memcpy(t + kQ3_KTileQsHigh + 64 * c + 4 * n, blk.qs + 32 + 4 * c, 4);
        }
        for (int i = 0; i < 3; ++i)
          std::memcpy(t + kQ3_KTileScales + 64 * i + 4 * n, blk.scales + 4 * i, 4);
        std::memcpy(d + 2 * n, &blk.d, 2);
      }
    }
}

// IQ4_XSTiles16 (WeightLayout, matmul.h): per group and super-block the 16
// rows' scales_l bytes interleaved 4 by 4, their scales_h, their d, then
// their nibble bytes interleaved 4 by 4: 34 whole lines in reading order.
void tile_rows_iq4_xs(const void* src, int64_t rows, int64_t cols, uint8_t* out) {
  const auto* in = static_cast<const BlockIQ4_XS*>(src);
  const int64_t blocks = cols / BlockIQ4_XS::kElems;
  for (int64_t g = 0; g < rows / kTiles16Rows; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* t = out + (g * blocks + b) * kIQ4_XSTileBytes;
      for (int64_t n = 0; n < kTiles16Rows; ++n) {
        const BlockIQ4_XS& blk = in[(g * kTiles16Rows + n) * blocks + b];
        std::memcpy(t + 4 * n, blk.scales_l, 4);
        std::memcpy(t + kIQ4_XSTileScalesH + 2 * n, &blk.scales_h, 2);
        std::memcpy(t + kIQ4_XSTileD + 2 * n, &blk.d, 2);
        for (int i = 0; i < 128; ++i) t[kIQ4_XSTileQs + 64 * (i / 4) + 4 * n + i % 4] = blk.qs[i];
      }
    }
}

// `layout` if a rows x cols matrix can take it, else Native.
WeightLayout if_fits(WeightLayout layout, int64_t rows, int64_t cols) {
  return layout_fits(layout, rows, cols) ? layout : WeightLayout::Native;
}

}  // namespace

WeightLayout regrouped_layout(GgmlType type, int64_t rows, int64_t cols) {
  WeightLayout tiles, groups;
  switch (type) {
    case GgmlType::Q4_0:
      tiles = WeightLayout::Q4_0Tiles16;
      groups = WeightLayout::Q4_0Groups8;
      break;
    case GgmlType::Q8_0:
      tiles = WeightLayout::Q8_0Tiles16;
      groups = WeightLayout::Q8_0Groups8;
      break;
    case GgmlType::F16:
      return if_fits(WeightLayout::F16Interleaved16, rows, cols);
    case GgmlType::BF16:
      return if_fits(WeightLayout::BF16Interleaved16, rows, cols);
    case GgmlType::Q4_K:
      return if_fits(WeightLayout::Q4_KTiles16, rows, cols);
    case GgmlType::Q5_K:
      return if_fits(WeightLayout::Q5_KTiles16, rows, cols);
    case GgmlType::Q6_K:
      return if_fits(WeightLayout::Q6_KTiles16, rows, cols);
    case GgmlType::IQ4_NL:
      return if_fits(WeightLayout::IQ4_NLTiles16, rows, cols);
    case GgmlType::MXFP4:
      return if_fits(WeightLayout::MXFP4Tiles16, rows, cols);
    case GgmlType::Q5_0:
      return if_fits(WeightLayout::Q5_0Tiles16, rows, cols);
    case GgmlType::Q5_1:
      return if_fits(WeightLayout::Q5_1Tiles16, rows, cols);
    case GgmlType::Q4_1:
      return if_fits(WeightLayout::Q4_1Tiles16, rows, cols);
    case GgmlType::Q2_K:
      return if_fits(WeightLayout::Q2_KTiles16, rows, cols);
    case GgmlType::Q3_K:
      return if_fits(WeightLayout::Q3_KTiles16, rows, cols);
    case GgmlType::IQ4_XS:
      return if_fits(WeightLayout::IQ4_XSTiles16, rows, cols);
    default:
      return WeightLayout::Native;
  }
  // Tiles16 with or without AMX: its VNNI kernel (one vpdpbusd covers 16
  // rows, no horizontal sums) matches or beats Groups8 at every batch size.
  // A vocabulary of 32001 rows, say, cannot take the 16-row groups of
  // Tiles16 but can still take Groups8.
  if (layout_fits(tiles, rows, cols)) return tiles;
  return if_fits(groups, rows, cols);
}

constexpr EnumName<WeightLayout> kLayoutNames[] = {
    {WeightLayout::Q4_0Groups8, "Q4_0Groups8"},
    {WeightLayout::Q8_0Groups8, "Q8_0Groups8"},
    {WeightLayout::Q8_0Tiles16, "Q8_0Tiles16"},
    {WeightLayout::Q4_0Tiles16, "Q4_0Tiles16"},
    {WeightLayout::F16Interleaved16, "F16Interleaved16"},
    {WeightLayout::BF16Interleaved16, "BF16Interleaved16"},
    {WeightLayout::Q4_KTiles16, "Q4_KTiles16"},
    {WeightLayout::Q5_KTiles16, "Q5_KTiles16"},
    {WeightLayout::Q6_KTiles16, "Q6_KTiles16"},
    {WeightLayout::IQ4_NLTiles16, "IQ4_NLTiles16"},
    {WeightLayout::Q5_0Tiles16, "Q5_0Tiles16"},
    {WeightLayout::Q5_1Tiles16, "Q5_1Tiles16"},
    {WeightLayout::Q4_1Tiles16, "Q4_1Tiles16"},
    {WeightLayout::Q2_KTiles16, "Q2_KTiles16"},
    {WeightLayout::Q3_KTiles16, "Q3_KTiles16"},
    {WeightLayout::IQ4_XSTiles16, "IQ4_XSTiles16"},
    {WeightLayout::MXFP4Tiles16, "MXFP4Tiles16"},
    {WeightLayout::Native, "Native"},
};

const char* layout_name(WeightLayout layout) { return name_of(layout, kLayoutNames); }

GgmlType layout_type(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::Q4_0Groups8:
    case WeightLayout::Q4_0Tiles16:
      return GgmlType::Q4_0;
    case WeightLayout::Q8_0Groups8:
    case WeightLayout::Q8_0Tiles16:
      return GgmlType::Q8_0;
    case WeightLayout::F16Interleaved16:
      return GgmlType::F16;
    case WeightLayout::BF16Interleaved16:
      return GgmlType::BF16;
    case WeightLayout::Q4_KTiles16:
      return GgmlType::Q4_K;
    case WeightLayout::Q5_KTiles16:
      return GgmlType::Q5_K;
    case WeightLayout::Q6_KTiles16:
      return GgmlType::Q6_K;
    case WeightLayout::IQ4_NLTiles16:
      return GgmlType::IQ4_NL;
    case WeightLayout::Q5_0Tiles16:
      return GgmlType::Q5_0;
    case WeightLayout::Q5_1Tiles16:
      return GgmlType::Q5_1;
    case WeightLayout::Q4_1Tiles16:
      return GgmlType::Q4_1;
    case WeightLayout::Q2_KTiles16:
      return GgmlType::Q2_K;
    case WeightLayout::Q3_KTiles16:
      return GgmlType::Q3_K;
    case WeightLayout::IQ4_XSTiles16:
      return GgmlType::IQ4_XS;
    case WeightLayout::MXFP4Tiles16:
      return GgmlType::MXFP4;
    case WeightLayout::Native:
      break;
  }
  return GgmlType::F32;
}

bool layout_fits(WeightLayout layout, int64_t rows, int64_t cols) {
  switch (layout) {
    case WeightLayout::Q4_0Groups8:
    case WeightLayout::Q8_0Groups8:
      return cols > 0 && cols % kRegroupCols == 0;
    case WeightLayout::Q8_0Tiles16:
    case WeightLayout::Q4_0Tiles16:
    case WeightLayout::IQ4_NLTiles16:
    case WeightLayout::Q5_0Tiles16:
    case WeightLayout::Q5_1Tiles16:
    case WeightLayout::Q4_1Tiles16:
    case WeightLayout::MXFP4Tiles16:
      return rows > 0 && rows % kTiles16Rows == 0 && cols > 0 && cols % 32 == 0;
    case WeightLayout::F16Interleaved16:
    case WeightLayout::BF16Interleaved16:
      return rows > 0 && rows % kTiles16Rows == 0 && cols > 0;
    case WeightLayout::Q4_KTiles16:
    case WeightLayout::Q5_KTiles16:
    case WeightLayout::Q6_KTiles16:
    case WeightLayout::Q2_KTiles16:
    case WeightLayout::Q3_KTiles16:
    case WeightLayout::IQ4_XSTiles16:
      return rows > 0 && rows % kTiles16Rows == 0 && cols > 0 && cols % BlockQ4_K::kElems == 0;
    case WeightLayout::Native:
      break;
  }
  return true;
}

const char* layout_requirement(WeightLayout layout) {
  static_assert(kRegroupCols == 256, "the Groups8 text below names kRegroupCols");
  switch (layout) {
    case WeightLayout::Q4_0Groups8:
    case WeightLayout::Q8_0Groups8:
      return "cols a multiple of 256";
    case WeightLayout::Q8_0Tiles16:
    case WeightLayout::Q4_0Tiles16:
    case WeightLayout::IQ4_NLTiles16:
    case WeightLayout::Q5_0Tiles16:
    case WeightLayout::Q5_1Tiles16:
    case WeightLayout::Q4_1Tiles16:
    case WeightLayout::MXFP4Tiles16:
      return "rows a multiple of 16 and cols of 32";
    case WeightLayout::F16Interleaved16:
    case WeightLayout::BF16Interleaved16:
      return "rows a multiple of 16";
    case WeightLayout::Q4_KTiles16:
    case WeightLayout::Q5_KTiles16:
    case WeightLayout::Q6_KTiles16:
    case WeightLayout::Q2_KTiles16:
    case WeightLayout::Q3_KTiles16:
    case WeightLayout::IQ4_XSTiles16:
      return "rows a multiple of 16 and cols of 256";
    case WeightLayout::Native:
      break;
  }
  return "any shape (nothing to regroup)";
}

void regroup_rows(WeightLayout layout, const void* src, int64_t rows, int64_t cols, void* dst) {
  if (layout == WeightLayout::Native || !layout_fits(layout, rows, cols))
    throw std::invalid_argument("regroup_rows: a " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " matrix cannot take the " +
                                layout_name(layout) + " layout (" + layout_requirement(layout) +
                                ")");
  auto* out = static_cast<uint8_t*>(dst);
  if (layout == WeightLayout::Q8_0Tiles16) return tile_rows<BlockQ8_0>(src, rows, cols, 0x80, out);
  if (layout == WeightLayout::Q4_0Tiles16) return tile_rows<BlockQ4_0>(src, rows, cols, 0, out);
  if (layout == WeightLayout::Q4_KTiles16) return tile_rows_k<BlockQ4_K>(src, rows, cols, out);
  if (layout == WeightLayout::Q5_KTiles16) return tile_rows_k<BlockQ5_K>(src, rows, cols, out);
  if (layout == WeightLayout::Q6_KTiles16) return tile_rows_q6_k(src, rows, cols, out);
  if (layout == WeightLayout::IQ4_NLTiles16)
    return tile_rows_block32<BlockIQ4_NL>(src, rows, cols, out);
  if (layout == WeightLayout::Q5_0Tiles16)
    return tile_rows_block32<BlockQ5_0>(src, rows, cols, out);
  if (layout == WeightLayout::Q5_1Tiles16)
    return tile_rows_block32<BlockQ5_1>(src, rows, cols, out);
  if (layout == WeightLayout::Q4_1Tiles16)
    return tile_rows_block32<BlockQ4_1>(src, rows, cols, out);
  if (layout == WeightLayout::MXFP4Tiles16)
    return tile_rows_block32<BlockMXFP4>(src, rows, cols, out);
  if (layout == WeightLayout::Q2_KTiles16) return tile_rows_q2_k(src, rows, cols, out);
  if (layout == WeightLayout::Q3_KTiles16) return tile_rows_q3_k(src, rows, cols, out);
  if (layout == WeightLayout::IQ4_XSTiles16) return tile_rows_iq4_xs(src, rows, cols, out);
  if (layout == WeightLayout::F16Interleaved16 || layout == WeightLayout::BF16Interleaved16)
    return interleave_rows(src, rows, cols, out);
  const int64_t groups = rows * (cols / kRegroupCols);
  if (layout == WeightLayout::Q4_0Groups8) {
    const auto* in = static_cast<const BlockQ4_0*>(src);
    for (int64_t g = 0; g < groups; ++g)
      regroup_q4_0(in + g * kGroupBlocks, out + g * kGroupBlocks * int64_t(sizeof(BlockQ4_0)));
  } else {
    const auto* in = static_cast<const BlockQ8_0*>(src);
    for (int64_t g = 0; g < groups; ++g)
      regroup_q8_0(in + g * kGroupBlocks, out + g * kGroupBlocks * int64_t(sizeof(BlockQ8_0)));
  }
}

bool layout_keeps_results(WeightLayout layout) {
  return layout == WeightLayout::Native || layout == WeightLayout::Q4_KTiles16 ||
         layout == WeightLayout::Q5_KTiles16 || layout == WeightLayout::Q6_KTiles16 ||
         layout == WeightLayout::IQ4_NLTiles16 || layout == WeightLayout::Q5_0Tiles16 ||
         layout == WeightLayout::Q5_1Tiles16 || layout == WeightLayout::Q4_1Tiles16 ||
         layout == WeightLayout::Q2_KTiles16 || layout == WeightLayout::Q3_KTiles16 ||
         layout == WeightLayout::IQ4_XSTiles16 || layout == WeightLayout::MXFP4Tiles16;
}

bool regrouping_preferred() { return simd_level() == SimdLevel::Avx512; }

}  // namespace kvforge
