// MXFP4 weights x Q8 activations (the Q8-blocks form), AVX-512 VNNI: the
// doubled E2M1 levels + 128, looked up by vpshufb, as vpdpbusd's unsigned
// operand, in the shared kernel of avx512_block32_dot.h (exact per-block
// integer sums folded as block32_fold.h defines: the scalar kernel's bits).
// The block scales are the E8M0 bytes turned into f32 bits exactly as
// e8m0_half does, 16 lanes at once.
#include <cstddef>

#include "core/formats/mxfp4.h"
#include "core/kernels/avx512_block32_dot.h"

namespace kvforge {
namespace {

// vpshufb controls, one per quad q: block i's E8M0 byte, at byte 17i of the
// quad = byte i of 128-bit lane i, to byte 4q of lane i (zeros elsewhere).
struct ScaleGather {
  alignas(64) uint8_t control[4][64];
};

constexpr ScaleGather make_scale_gather() {
  ScaleGather g{};
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 16; ++j) g.control[q][16 * i + j] = j == 4 * q ? uint8_t(i) : 0x80;
  return g;
}

constexpr ScaleGather kScaleGather = make_scale_gather();

struct MXFP4Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockMXFP4);
  static constexpr int kOffsetShift = 7;  // level + 128

  // The 16 bytes at p, of which only the first n may be read (zeros after).
  static __m128i load16(const uint8_t* p, int64_t n) {
    if (n >= 16) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (n <= 0) return _mm_setzero_si128();
    return _mm_maskz_loadu_epi8(__mmask16((1u << n) - 1), p);
  }

  // Quad q of a group at blk (4 blocks of 17 bytes, only the first `bytes`
  // read): block i's codes into 128-bit lane i, split into lo/hi like Q4_0's
  // nibbles (element j low, j + 16 high in byte j of qs) and looked up; its
  // E8M0 byte into dword 4i + q of e.
  static void load_quad(const uint8_t* blk, int64_t bytes, int q, __m512i& lo, __m512i& hi,
                        __m512i& e) {
    const auto codes = [&](int64_t i) {
      const int64_t at = i * kBlockBytes + int64_t(offsetof(BlockMXFP4, qs));
      return load16(blk + at, bytes - at);
    };
    __m512i qs = _mm512_castsi128_si512(codes(0));
    qs = _mm512_inserti32x4(qs, codes(1), 1);
    qs = _mm512_inserti32x4(qs, codes(2), 2);
    qs = _mm512_inserti32x4(qs, codes(3), 3);
    avx512_lookup_nibbles(kMxfp4LevelsPlus128, qs, lo, hi);
    e = _mm512_shuffle_epi8(avx512_load_prefix(blk, bytes),
                            _mm512_load_si512(kScaleGather.control[q]));
  }

  template <int NQ>
  static void load_group(const uint8_t* blk, int64_t bytes, Block32WeightGroup& g) {
    __m512i e = _mm512_setzero_si512();
    for (int q = 0; q < NQ; ++q) {
      const int64_t at = 4 * q * kBlockBytes;
      __m512i eq;
      load_quad(blk + at, bytes - at, q, g.lo[q], g.hi[q], eq);
      e = _mm512_or_si512(e, eq);
    }
    // Dword 4i + q holds block 4q + i's byte: transposed into block order.
    const __m512i block_order =
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    g.dw = avx512_e8m0_half(_mm512_permutexvar_epi32(block_order, e));
  }
};

}  // namespace

void matmul_rows_mxfp4_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_block32_avx512<MXFP4Blocks>(task, r0, r1);
}

}  // namespace kvforge
