// Q4_1 weights x Q8-blocks activations, portable scalar code (affine_dot_scalar.h).
#include "core/formats/f16.h"
#include "core/formats/q4_1.h"
#include "core/kernels/affine_dot_scalar.h"

namespace kvforge {
namespace {

struct Q4_1Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);

  static int32_t dot(const uint8_t* block, const int8_t* a) {
    const uint8_t* qs = reinterpret_cast<const BlockQ4_1*>(block)->qs;
    uint8_t q[32];  // levels in element order: one product loop GCC vectorizes
    for (int i = 0; i < 16; ++i) {
      q[i] = qs[i] & 0x0f;
      q[i + 16] = qs[i] >> 4;
    }
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += q[i] * a[i];
    return sum;
  }

  static void step_and_offset(const uint8_t* block, float& d, float& m) {
    const auto& b = *reinterpret_cast<const BlockQ4_1*>(block);
    d = fp16_to_fp32(b.d);
    m = fp16_to_fp32(b.m);
  }
};

}  // namespace

void matmul_rows_q4_1_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, AffineScalarDot<Q4_1Blocks>{task});
}

}  // namespace kvforge
