// BF16 weights x f32 activations, portable scalar code.
#include <cstring>

#include "core/formats/bf16.h"
#include "core/kernels/scalar_float_dot.h"

namespace kvforge {

void matmul_rows_bf16_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  scalar_float_dot::run(task, r0, r1, [](const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + c * 2, 2);
    return bf16_to_fp32(h);
  });
}

}  // namespace kvforge
