// IQ4_NL weights x Q8 activations (the Q8-blocks form), portable scalar code:
// per 32-block the exact integer dot product of the codebook levels with the
// activation quants, folded into f32 as block32_fold.h defines for every level.
#include <cstddef>

#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_nl.h"
#include "core/kernels/block32_fold.h"

namespace kvforge {
namespace {

struct IQ4_NLLevels {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);

  static void levels(const uint8_t* block, int8_t (&w)[32]) {
    const uint8_t* qs = block + offsetof(BlockIQ4_NL, qs);
    for (int j = 0; j < 16; ++j) {
      w[j] = kIq4Codebook[qs[j] & 15];
      w[j + 16] = kIq4Codebook[qs[j] >> 4];
    }
  }
};

}  // namespace

void matmul_rows_iq4_nl_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Block32ScalarDot<IQ4_NLLevels>{task});
}

}  // namespace kvforge
