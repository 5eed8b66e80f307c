// Q5_0 weights x Q8 activations (the Q8-blocks form), AVX2: the levels
// q - 16 as signed bytes, then the shared kernel of avx2_block32_dot.h, which
// folds exact per-block integer sums as block32_fold.h defines (the scalar
// kernel's bits).
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "core/formats/q5_0.h"
#include "core/kernels/avx2_block32_dot.h"

namespace kvforge {
namespace {

struct Q5_0Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);

  // The 32 bits of h, one per element in element order, go to byte e as h's
  // byte e/8 tested against bit e%8; where the bit is clear, ORing 0xf0 into
  // the nibble gives nibble - 16 as a signed byte, where set the nibble is
  // the level.
  static __m256i levels(const uint8_t* block) {
    const __m256i nibbles = avx2_nibbles_in_order(block + offsetof(BlockQ5_0, qs));
    uint32_t h;
    std::memcpy(&h, block + offsetof(BlockQ5_0, qh), sizeof(h));
    const __m256i byte_of_h =
        _mm256_shuffle_epi8(_mm256_set1_epi32(int(h)),
                            _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2,
                                             2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(byte_of_h, bit), bit);
    return _mm256_or_si256(nibbles, _mm256_andnot_si256(set, _mm256_set1_epi8(char(0xf0))));
  }
};

}  // namespace

void matmul_rows_q5_0_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<kBlock32Avx2TokenTile>(task, r0, r1, Block32Avx2Dot<Q5_0Levels>{task});
}

}  // namespace kvforge
