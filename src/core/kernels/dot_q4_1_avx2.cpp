// Q4_1 weights x Q8-blocks activations, AVX2 (affine_dot_avx2.h): the
// nibbles are the unsigned levels as they are.
#include <immintrin.h>

#include "core/formats/q4_1.h"
#include "core/kernels/affine_dot_avx2.h"

namespace kvforge {
namespace {

struct Q4_1Avx2Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);

  // Elements 0-15 are the low nibbles of qs, 16-31 the high ones.
  static __m256i levels(const uint8_t* block) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low4),
                            _mm_and_si128(packed, low4));
  }
};

}  // namespace

void matmul_rows_q4_1_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, AffineAvx2Dot<Q4_1Avx2Levels>{task});
}

}  // namespace kvforge
