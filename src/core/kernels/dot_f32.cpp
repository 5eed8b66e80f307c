// F32 weights x f32 activations, portable scalar code.
#include <cstring>

#include "core/kernels/scalar_float_dot.h"

namespace kvforge {

void matmul_rows_f32_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  scalar_float_dot::run(task, r0, r1, [](const uint8_t* row, int64_t c) {
    float v;
    std::memcpy(&v, row + c * 4, 4);
    return v;
  });
}

}  // namespace kvforge
