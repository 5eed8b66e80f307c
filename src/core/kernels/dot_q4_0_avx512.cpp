// Q4_0 weights x Q8 activations, AVX-512 VNNI (see avx512_q8_block_dot.h):
// the nibbles (w + 8) are vpdpbusd's unsigned operand as they are.
#include "core/formats/q4_0.h"
#include "core/kernels/avx512_q8_block_dot.h"

namespace kvforge {
namespace {

struct Q4_0Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_0);  // f16 d, 16 bytes of nibbles
  static constexpr int kOffsetShift = 3;                     // u = w + 8

  // Blocks 0..3 at blk span 72 bytes, every field at an even offset: block i's
  // scale is f16 word 9i, its 16 nibble bytes words 9i+1..9i+8. One permute
  // of 16-bit words gathers the 4 x 16 nibble bytes [qs0, qs1, qs2, qs3]; as
  // Q4_0 stores element j in the low and j+16 in the high nibble of byte j,
  // the low nibbles are `lo` and the high ones `hi` of the quad layout.
  static WeightQuad load_quad(const uint8_t* blk) {
    const __m512i first = _mm512_loadu_si512(blk);  // bytes 0..63
    const __m512i rest =
        _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 64)));
    alignas(64) static const uint16_t pick_qs_words[32] = {
        1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 12, 13, 14, 15, 16, 17,
        19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31, 32, 33, 34, 35};
    const __m512i pick_qs = _mm512_load_si512(pick_qs_words);
    const __m512i qs = _mm512_permutex2var_epi16(first, pick_qs, rest);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    WeightQuad wq;
    wq.lo = _mm512_and_si512(qs, low4);
    wq.hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
    alignas(64) static const uint16_t pick_d_words[32] = {0,  0,  0,  0,  9,  9, 9, 9, 18, 18, 18,
                                                          18, 27, 27, 27, 27, 0, 0, 0, 0,  0,  0,
                                                          0,  0,  0,  0,  0,  0, 0, 0, 0,  0};
    const __m512i pick_d = _mm512_load_si512(pick_d_words);
    wq.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(pick_d, first)));
    return wq;
  }
};

// Q4_0Groups8 (weight_repack.h): a quad's 4 x 16 nibble bytes are one
// vector, [qs0, qs1, qs2, qs3] as load_quad gathers them.
struct Q4_0Groups8 {
  static constexpr int64_t kGroupBytes = 8 * sizeof(BlockQ4_0);
  static constexpr int kOffsetShift = Q4_0Blocks::kOffsetShift;
  static void quad(const uint8_t* quads, int j, WeightQuad& wq) {
    const __m512i qs = _mm512_loadu_si512(quads + 64 * j);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    wq.lo = _mm512_and_si512(qs, low4);
    wq.hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
  }
};

}  // namespace

void matmul_rows_q4_0_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kQ8RowTile, kQ8TokenTile>(task, r0, r1, Avx512Q8BlockDot<Q4_0Blocks>{task});
}

void matmul_rows_q4_0_groups8_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kQ8RowTile, kQ8TokenTile>(task, r0, r1, Avx512Q8GroupDot<Q4_0Groups8>{task});
}

}  // namespace kvforge
