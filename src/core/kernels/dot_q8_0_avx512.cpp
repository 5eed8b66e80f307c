// Q8_0 weights x Q8 activations, AVX-512 VNNI (see avx512_q8_block_dot.h).
#include "core/formats/q8_0.h"
#include "core/kernels/avx512_q8_block_dot.h"

namespace kvforge {
namespace {

struct Q8_0Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);  // f16 d, 32 x int8
  static constexpr int kOffsetShift = 7;                     // u = w + 128

  // Blocks 0..3 at blk: X = [q0 | q1], Y = [q2 | q3] (32 quants each, a masked
  // broadcast load fills the upper half without a shuffle), then one 128-bit
  // lane shuffle per half: lo = [q0 0..15, q1 0..15, q2 0..15, q3 0..15].
  // The four scales sit at bytes 0, 34, 68 and 102: f16 words 0 and 17 of the
  // first 64 bytes, 2 and 19 of the next 64, picked by one two-source permute.
  static WeightQuad load_quad(const uint8_t* blk) {
    constexpr int64_t kB = kBlockBytes;
    const auto load256 = [](const uint8_t* p) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    };
    const __m512i x = _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(load256(blk + 2)), 0xf0,
                                                  load256(blk + kB + 2));
    const __m512i y = _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(load256(blk + 2 * kB + 2)),
                                                  0xf0, load256(blk + 3 * kB + 2));
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    WeightQuad wq;
    wq.lo = _mm512_xor_si512(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(2, 0, 2, 0)), flip);
    wq.hi = _mm512_xor_si512(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 1, 3, 1)), flip);
    alignas(64) static const uint16_t pick_words[32] = {0,  0,  0,  0,  17, 17, 17, 17, 34, 34, 34,
                                                        34, 51, 51, 51, 51, 0,  0,  0,  0,  0,  0,
                                                        0,  0,  0,  0,  0,  0,  0,  0,  0,  0};
    const __m512i pick = _mm512_load_si512(pick_words);
    const __m512i halves =
        _mm512_permutex2var_epi16(_mm512_loadu_si512(blk), pick, _mm512_loadu_si512(blk + 64));
    wq.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(halves));
    return wq;
  }
};

// Q8_0Groups8 (weight_repack.h): per quad, lo and hi as load_quad builds
// them (unsigned, w + 128), 64 bytes each.
struct Q8_0Groups8 {
  static constexpr int64_t kGroupBytes = 8 * sizeof(BlockQ8_0);
  static constexpr int kOffsetShift = Q8_0Blocks::kOffsetShift;
  static void quad(const uint8_t* quads, int j, WeightQuad& wq) {
    wq.lo = _mm512_loadu_si512(quads + 128 * j);
    wq.hi = _mm512_loadu_si512(quads + 128 * j + 64);
  }
};

}  // namespace

void matmul_rows_q8_0_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kQ8RowTile, kQ8TokenTile>(task, r0, r1, Avx512Q8BlockDot<Q8_0Blocks>{task});
}

void matmul_rows_q8_0_groups8_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kQ8RowTile, kQ8TokenTile>(task, r0, r1, Avx512Q8GroupDot<Q8_0Groups8>{task});
}

}  // namespace kvforge
