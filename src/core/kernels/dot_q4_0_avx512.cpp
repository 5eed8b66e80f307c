// Q4_0 weights x Q8 activations, AVX-512 VNNI: two blocks of nibbles are
// unpacked to 64 signed bytes (nibble - 8) in element order, then the shared
// block dot product of avx512_q8_block_dot.h.
#include "core/formats/q4_0.h"
#include "core/kernels/avx512_q8_block_dot.h"

namespace kvforge {
namespace {

struct Q4_0Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_0);

  // Nibbles of the blocks at qs0, qs1 as [lo0, hi0, lo1, hi1] - 8 (16 bytes
  // each): each block's 16 bytes are broadcast into two 128-bit chunks and
  // the second chunk of each is shifted right by 4 (a masked shift), so no
  // cross-lane shuffle is needed. `keep` zeroes bytes past a single block.
  static __m512i unpack(const uint8_t* qs0, const uint8_t* qs1, __mmask64 keep) {
    const __m512i b0 =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0)));
    const __m512i b1 =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)));
    const __m512i both = _mm512_mask_blend_epi64(0xf0, b0, b1);  // [qs0, qs0, qs1, qs1]
    const __m512i shifted = _mm512_mask_srli_epi64(both, 0xcc, both, 4);
    const __m512i nibbles = _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
    return _mm512_maskz_sub_epi8(keep, nibbles, _mm512_set1_epi8(8));
  }
  static __m512i load_pair(const uint8_t* blk) {
    return unpack(blk + 2, blk + kBlockBytes + 2, ~0ull);
  }
  static __m512i load_single(const uint8_t* blk) { return unpack(blk + 2, blk + 2, 0xffffffffull); }
};

}  // namespace

void matmul_rows_q4_0_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kQ8RowTile, kQ8TokenTile>(task, r0, r1, Avx512Q8BlockDot<Q4_0Blocks>{task});
}

}  // namespace kvforge
