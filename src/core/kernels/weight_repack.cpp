#include "core/kernels/weight_repack.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/cpu_features.h"
#include "core/formats/q4_0.h"
#include "core/formats/q8_0.h"

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

}  // namespace

WeightLayout regrouped_layout(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return WeightLayout::Q4_0Groups8;
    case GgmlType::Q8_0:
      return WeightLayout::Q8_0Groups8;
    default:
      return WeightLayout::Native;
  }
}

const char* layout_name(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::Q4_0Groups8:
      return "Q4_0Groups8";
    case WeightLayout::Q8_0Groups8:
      return "Q8_0Groups8";
    case WeightLayout::Native:
      break;
  }
  return "Native";
}

bool regroup_fits(GgmlType type, int64_t cols) {
  return regrouped_layout(type) != WeightLayout::Native && cols > 0 && cols % kRegroupCols == 0;
}

void regroup_rows(GgmlType type, const void* src, int64_t rows, int64_t cols, void* dst) {
  if (!regroup_fits(type, cols))
    throw std::invalid_argument("regroup_rows: " + std::string(type_name(type)) + " with cols " +
                                std::to_string(cols) +
                                " has no regrouped layout (Q4_0 and Q8_0 with cols a multiple "
                                "of 256 do)");
  const int64_t groups = rows * (cols / kRegroupCols);
  auto* out = static_cast<uint8_t*>(dst);
  if (type == GgmlType::Q4_0) {
    const auto* in = static_cast<const BlockQ4_0*>(src);
    for (int64_t g = 0; g < groups; ++g)
      regroup_q4_0(in + g * kGroupBlocks, out + g * kGroupBlocks * int64_t(sizeof(BlockQ4_0)));
  } else {
    const auto* in = static_cast<const BlockQ8_0*>(src);
    for (int64_t g = 0; g < groups; ++g)
      regroup_q8_0(in + g * kGroupBlocks, out + g * kGroupBlocks * int64_t(sizeof(BlockQ8_0)));
  }
}

bool regrouping_preferred() { return simd_level() == SimdLevel::Avx512; }

}  // namespace kvforge
