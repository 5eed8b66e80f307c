#include "core/kernels/weight_repack.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/cpu_features.h"
#include "core/formats/q4_0.h"

namespace kvforge {

namespace {
constexpr int64_t kGroupBlocks = 8;
}

bool q4_0_groups8_fits(int64_t cols) {
  return cols > 0 && cols % (kGroupBlocks * BlockQ4_0::kElems) == 0;
}

void repack_q4_0_groups8(const void* src, int64_t rows, int64_t cols, void* dst) {
  if (!q4_0_groups8_fits(cols))
    throw std::invalid_argument("repack_q4_0_groups8: cols " + std::to_string(cols) +
                                " is not a multiple of 256 (8 Q4_0 blocks)");
  const auto* in = static_cast<const BlockQ4_0*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t groups = rows * (cols / BlockQ4_0::kElems) / kGroupBlocks;
  for (int64_t g = 0; g < groups; ++g) {
    const BlockQ4_0* blocks = in + g * kGroupBlocks;
    uint8_t* scales = out;
    uint8_t* nibbles = out + kGroupBlocks * sizeof(uint16_t);
    for (int64_t b = 0; b < kGroupBlocks; ++b) {
      std::memcpy(scales + b * sizeof(uint16_t), &blocks[b].d, sizeof(uint16_t));
      std::memcpy(nibbles + b * sizeof(blocks[b].qs), blocks[b].qs, sizeof(blocks[b].qs));
    }
    out += kGroupBlocks * sizeof(BlockQ4_0);
  }
}

bool q4_0_groups8_preferred() { return simd_level() == SimdLevel::Avx512; }

}  // namespace kvforge
