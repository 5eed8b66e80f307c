// Q5_1 weights x Q8-blocks activations, portable scalar code (affine_dot_scalar.h).
#include <cstring>

#include "core/formats/f16.h"
#include "core/formats/q5_1.h"
#include "core/kernels/affine_dot_scalar.h"

namespace kvforge {
namespace {

// For each qh byte, 0xff in the bytes of its set bits (byte e: bit e).
struct FifthBitMasks {
  uint64_t of[256];
};
constexpr FifthBitMasks fifth_bit_masks() {
  FifthBitMasks t{};
  for (int v = 0; v < 256; ++v)
    for (int e = 0; e < 8; ++e)
      if ((v >> e) & 1) t.of[v] |= uint64_t(0xff) << (8 * e);
  return t;
}
constexpr FifthBitMasks kFifthBitMasks = fifth_bit_masks();

struct Q5_1Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);

  // The low 4 bits' products, plus 16 times the quants of the elements with
  // their 5th bit set. That sum is taken 8 quants at a time in a 64-bit word
  // (biased by +128 to be unsigned, masked by the qh byte, bytes summed
  // pairwise, then by one multiply): without byte shuffles at this level, a
  // loop over the bits or levels assembled from them cost several times more.
  static int32_t dot(const uint8_t* block, const int8_t* a) {
    const auto& b = *reinterpret_cast<const BlockQ5_1*>(block);
    uint8_t q[32];  // low 4 bits in element order: one product loop GCC vectorizes
    for (int i = 0; i < 16; ++i) {
      q[i] = b.qs[i] & 0x0f;
      q[i + 16] = b.qs[i] >> 4;
    }
    int32_t low = 0, high = 0;
    for (int i = 0; i < 32; ++i) low += q[i] * a[i];
    constexpr uint64_t kBytes = 0x0101010101010101u, kWords = 0x0001000100010001u;
    for (int g = 0; g < 4; ++g) {
      const uint64_t mask = kFifthBitMasks.of[b.qh[g]];
      uint64_t x;
      std::memcpy(&x, a + 8 * g, 8);
      x = (x ^ (0x80 * kBytes)) & mask;  // a + 128 where the bit is set, else 0
      const uint64_t pairs = (x & (0xff * kWords)) + ((x >> 8) & (0xff * kWords));
      const int32_t biased = int32_t((pairs * kWords) >> 48);  // <= 8 * 255
      const int32_t count = int32_t(((mask & kBytes) * kBytes) >> 56);
      high += biased - 128 * count;
    }
    return low + 16 * high;
  }

  static void step_and_offset(const uint8_t* block, float& d, float& m) {
    const auto& b = *reinterpret_cast<const BlockQ5_1*>(block);
    d = fp16_to_fp32(b.d);
    m = fp16_to_fp32(b.m);
  }
};

}  // namespace

void matmul_rows_q5_1_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, AffineScalarDot<Q5_1Blocks>{task});
}

}  // namespace kvforge
