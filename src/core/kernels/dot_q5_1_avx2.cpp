// Q5_1 weights x Q8-blocks activations, AVX2 (affine_dot_avx2.h): the
// nibbles with each element's 5th bit from qh added as 16.
#include <immintrin.h>

#include <cstring>

#include "core/formats/q5_1.h"
#include "core/kernels/affine_dot_avx2.h"

namespace kvforge {
namespace {

struct Q5_1Avx2Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);

  static __m256i levels(const uint8_t* block) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 8));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m256i nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low4),
                                             _mm_and_si128(packed, low4));
    // Byte j gets byte j/8 of qh (both halves of the shuffle see all 4), then
    // tests its bit j%8.
    int32_t h;
    std::memcpy(&h, block + 4, sizeof(h));
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(h), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2,
                                               2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_or_si256(nibbles, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
  }
};

}  // namespace

void matmul_rows_q5_1_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, AffineAvx2Dot<Q5_1Avx2Levels>{task});
}

}  // namespace kvforge
