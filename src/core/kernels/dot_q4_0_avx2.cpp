// Q4_0 weights x Q8 activations, AVX2: nibbles unpacked to signed bytes
// (nibble - 8), then the same exact integer block dot product as Q8_0
// (avx2_q8_scaled_dot.h).
#include <immintrin.h>

#include "core/formats/q4_0.h"
#include "core/kernels/avx2_q8_scaled_dot.h"

namespace kvforge {
namespace {

struct Q4_0Levels {
  using Block = BlockQ4_0;
  static __m256i levels(const uint8_t* blk) {
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    // Elements 0-15 are the low nibbles, 16-31 the high nibbles.
    const __m256i nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low4),
                                             _mm_and_si128(packed, low4));
    return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
  }
};

}  // namespace

void matmul_rows_q4_0_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q8ScaledAvx2Dot<Q4_0Levels>{task});
}

}  // namespace kvforge
