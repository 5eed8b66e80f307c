// Q5_1 weights x Q8-blocks activations, portable scalar code (affine_dot_scalar.h).
#include <cstring>

#include "core/formats/f16.h"
#include "core/formats/q5_1.h"
#include "core/kernels/affine_dot_scalar.h"

namespace kvforge {
namespace {

struct Q5_1Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);

  static void levels(const uint8_t* block, uint8_t (&q)[32], float& d, float& m) {
    const auto& b = *reinterpret_cast<const BlockQ5_1*>(block);
    uint32_t h;
    std::memcpy(&h, b.qh, sizeof(h));
    for (int i = 0; i < 16; ++i) {
      q[i] = uint8_t((b.qs[i] & 0x0f) | ((h >> i) & 1) << 4);
      q[i + 16] = uint8_t((b.qs[i] >> 4) | ((h >> (i + 16)) & 1) << 4);
    }
    d = fp16_to_fp32(b.d);
    m = fp16_to_fp32(b.m);
  }
};

}  // namespace

void matmul_rows_q5_1_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, AffineScalarDot<Q5_1Levels>{task});
}

}  // namespace kvforge
