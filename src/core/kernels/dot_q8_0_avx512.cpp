// Q8_0 weights x Q8 activations, AVX-512 VNNI (see avx512_q8_block_dot.h).
#include "core/formats/q8_0.h"
#include "core/kernels/avx512_q8_block_dot.h"

namespace kvforge {
namespace {

struct Q8_0Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);
  static __m512i load_pair(const uint8_t* blk) {
    // A masked broadcast load fills the upper half without a shuffle.
    const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    const __m256i second =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kBlockBytes + 2));
    return _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(first), 0xf0, second);
  }
  static __m512i load_single(const uint8_t* blk) {
    return _mm512_maskz_loadu_epi8(0xffffffffull, blk + 2);
  }
};

}  // namespace

void matmul_rows_q8_0_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kQ8RowTile, kQ8TokenTile>(task, r0, r1, Avx512Q8BlockDot<Q8_0Blocks>{task});
}

}  // namespace kvforge
