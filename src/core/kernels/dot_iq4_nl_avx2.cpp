// IQ4_NL weights x Q8 activations (the Q8-blocks form), AVX2: the indices
// looked up in the codebook by vpshufb, then the shared kernel of
// avx2_block32_dot.h, which folds exact per-block integer sums as
// block32_fold.h defines (the scalar kernel's bits).
#include <immintrin.h>

#include <cstddef>

#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_nl.h"
#include "core/kernels/avx2_block32_dot.h"

namespace kvforge {
namespace {

struct IQ4_NLLevels {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);

  // |level| <= 127 keeps avx2_dot_i8's pair sums in int16.
  static __m256i levels(const uint8_t* block) {
    const __m256i codebook = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Codebook)));
    return _mm256_shuffle_epi8(codebook, avx2_nibbles_in_order(block + offsetof(BlockIQ4_NL, qs)));
  }
};

}  // namespace

void matmul_rows_iq4_nl_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<kBlock32Avx2TokenTile>(task, r0, r1, Block32Avx2Dot<IQ4_NLLevels>{task});
}

}  // namespace kvforge
