// Q5_0 weights x Q8 activations (the Q8-blocks form), portable scalar code:
// per 32-block the exact integer dot product of the levels q - 16 with the
// activation quants, folded into f32 as block32_fold.h defines for every level.
#include <cstring>

#include "core/formats/q5_0.h"
#include "core/kernels/block32_fold.h"

namespace kvforge {
namespace {

struct Q5_0Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);

  static void levels(const uint8_t* block, int8_t (&w)[32]) {
    BlockQ5_0 b;
    std::memcpy(&b, block, sizeof(b));
    uint32_t h;
    std::memcpy(&h, b.qh, sizeof(h));
    for (int j = 0; j < 16; ++j) {
      w[j] = int8_t(((b.qs[j] & 15) | ((h >> j) & 1) << 4) - 16);
      w[j + 16] = int8_t(((b.qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4) - 16);
    }
  }
};

}  // namespace

void matmul_rows_q5_0_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Block32ScalarDot<Q5_0Levels>{task});
}

}  // namespace kvforge
