// F16 / BF16 weights in the F16Interleaved16 / BF16Interleaved16 layouts (matmul.h) x f32
// activations, AVX-512: decode, batched decode and prefill alike.
//
// A group's 32 bytes at column k widen (vcvtph2ps, or a bf16's 16-bit left shift) to one register
// whose lane n is row n's weight; times token t's x[t][k] broadcast, one FMA adds a product to
// each of the 16 rows' sums. Each widened register serves every token of the tile and each
// broadcast both groups of a pair, and no lanes are ever summed: against the native kernel (4
// rows x 4 tokens, a widen per row and 16 columns for every 4 tokens, and a horizontal sum per
// (row, token)) that is 2 widens per 24 FMAs instead of 4 per 16. Every (row, token) is
// acc = fma(w[k], x[k], acc) for k = 0..cols-1 from 0, whatever the tile: bitwise the same alone
// and in any batch, on any thread count.
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {
namespace {

constexpr int64_t kRows = 16;  // per group

// Weight bytes per row block of the batch loop: the block's groups stay in
// L2 while every token tile passes over them.
constexpr int64_t kBlockBytes = 256 * 1024;

// The 16 rows' weights at one column (32 bytes) as f32, exactly.
struct WidenF16 {
  static __m512 load16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct WidenBf16 {
  static __m512 load16(const uint8_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// Groups `groups[0..G)` x tokens [t0, t0 + T): results to y.
template <class Widen, int G, int T>
void tile(const MatmulTask& task, const int64_t* groups, int64_t t0) {
  const int64_t cols = task.cols;
  const uint8_t* w[G];
  for (int j = 0; j < G; ++j) w[j] = task.weights + groups[j] * kRows * int64_t(task.row_bytes);
  const float* x[T];
  for (int t = 0; t < T; ++t) x[t] = task.x + (t0 + t) * cols;
  __m512 acc[G][T];
  for (int j = 0; j < G; ++j)
    for (int t = 0; t < T; ++t) acc[j][t] = _mm512_setzero_ps();
  for (int64_t k = 0; k < cols; ++k) {
    __m512 wv[G];
    for (int j = 0; j < G; ++j) wv[j] = Widen::load16(w[j] + 32 * k);
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_set1_ps(x[t][k]);
      for (int j = 0; j < G; ++j) acc[j][t] = _mm512_fmadd_ps(wv[j], xv, acc[j][t]);
    }
  }
  for (int j = 0; j < G; ++j)
    for (int t = 0; t < T; ++t)
      _mm512_storeu_ps(task.y + (t0 + t) * task.rows + groups[j] * kRows, acc[j][t]);
}

// The tile for a run-time ng <= G groups and nt <= T tokens.
template <class Widen, int G, int T>
void tile_upto(const MatmulTask& task, const int64_t* groups, int ng, int64_t t0, int nt) {
  if constexpr (G > 1) {
    if (ng < G) return tile_upto<Widen, G - 1, T>(task, groups, ng, t0, nt);
  }
  if constexpr (T > 1) {
    if (nt < T) return tile_upto<Widen, G, T - 1>(task, groups, ng, t0, nt);
  }
  tile<Widen, G, T>(task, groups, t0);
}

// Decode (1 or 2 tokens): 8 groups per tile, one from each eighth of the
// range, so that 8 independent sums hide the FMA latency of each row's
// chain and the tile reads 8 long sequential streams (as the native F16
// kernel does); the groups left over go in one smaller tile.
template <class Widen>
void decode(const MatmulTask& task, int64_t g0, int64_t g1) {
  constexpr int kStreams = 8;
  const int nt = int(task.n_tokens);
  const int64_t stream = (g1 - g0) / kStreams;
  int64_t groups[kStreams];
  for (int64_t i = 0; i < stream; ++i) {
    for (int s = 0; s < kStreams; ++s) groups[s] = g0 + i + s * stream;
    tile_upto<Widen, kStreams, 2>(task, groups, kStreams, 0, nt);
  }
  const int left = int(g1 - g0 - kStreams * stream);
  for (int s = 0; s < left; ++s) groups[s] = g0 + kStreams * stream + s;
  if (left > 0) tile_upto<Widen, kStreams, 2>(task, groups, left, 0, nt);
}

// Batches: row blocks of whole groups; per block every 12-token tile in
// turn over pairs of groups (2 x 12 accumulators).
template <class Widen>
void batch(const MatmulTask& task, int64_t g0, int64_t g1) {
  constexpr int kGroups = 2, kTokens = 12;
  const int64_t group_bytes = kRows * int64_t(task.row_bytes);
  int64_t block = kBlockBytes / group_bytes / kGroups * kGroups;
  if (block < kGroups) block = kGroups;
  for (int64_t b = g0; b < g1; b += block) {
    const int64_t e = b + block < g1 ? b + block : g1;
    for (int64_t t = 0; t < task.n_tokens; t += kTokens) {
      const int nt = int(task.n_tokens - t < kTokens ? task.n_tokens - t : kTokens);
      for (int64_t g = b; g < e; g += kGroups) {
        const int64_t groups[kGroups] = {g, g + 1};
        tile_upto<Widen, kGroups, kTokens>(task, groups, int(e - g < kGroups ? e - g : kGroups), t,
                                           nt);
      }
    }
  }
}

template <class Widen>
void matmul_rows_interleaved16(const MatmulTask& task, int64_t r0, int64_t r1) {
  const int64_t g0 = (r0 + kRows - 1) / kRows, g1 = (r1 + kRows - 1) / kRows;
  if (g0 >= g1) return;
  if (task.n_tokens <= 2) {
    decode<Widen>(task, g0, g1);
  } else {
    batch<Widen>(task, g0, g1);
  }
}

}  // namespace

void matmul_rows_f16_interleaved16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_interleaved16<WidenF16>(task, r0, r1);
}

void matmul_rows_bf16_interleaved16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_interleaved16<WidenBf16>(task, r0, r1);
}

}  // namespace kvforge
