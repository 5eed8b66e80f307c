// AVX-512 tile step (16 floats per register). Positions go in groups of 16.
// When head_dim is a multiple of 16, f32 / f16 / bf16 / int8 records are read
// straight into registers (vcvtph2ps, sign extension and scale, ...) where
// they are used; q4 records, and every format at other head sizes, are first
// decoded into an L1 buffer laid out chunk-major, [head_dim / 16][16
// positions][16] with zero lanes past head_dim. Either way a record's values
// are the same bits as kv_decode_head gives.
//
// Scores: per query head, one partial-product register per position (its
// head_dim/16 chunks multiplied and summed in chunk order), then a 4-level
// blend/swap/add fold turns the 16 registers into one holding the group's 16
// scores: no horizontal reduce per score. Up to 3 heads share each K chunk.
// V: the accumulators of a block of up to 4 heads × 2 chunks stay in
// registers across a group, two partial sums per (head, chunk), even and odd
// positions, so a single head still keeps 4 FMA chains in flight.
//
// Every head's arithmetic depends only on its own query, acc and the job's
// records, never on n_q or on how heads are blocked, so a head alone and in
// a group give the same bits. exp is a degree-6 polynomial after range
// reduction (relative error ~2e-7): results differ from the scalar reference
// only by float rounding.
//
// Compiled with AVX-512 flags: internal linkage only, no std templates, no
// inline functions shared with other TUs (see core/cpu_features.h).
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized inside their own
// _mm256_undefined_* helpers when reductions are inlined (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/ops/attention.h"
#include "core/ops/attention_tile.h"
#include "core/ops/avx512_exp.h"

namespace kvforge::attention_detail {
namespace {

constexpr int kW = 16;                 // floats per register, and positions per score group
constexpr int kChunkFloats = kW * kW;  // one chunk of a group in the buffer: [16 positions][16]
// Heads whose decoded group would not fit the stack buffer (32 KiB) take the
// scalar tile step; LLaMA-family heads are 64-256 wide.
constexpr int kMaxHeadDim = 512;
// Score block: kScoreHeads × 8 accumulators + their queries + one K chunk.
constexpr int kScoreHeads = 3;
// V block: heads × chunks × 2 partial sums + 2 positions' weights per head.
constexpr int kValueHeads = 4;
constexpr int kValueChunks = 2;

__mmask16 lanes_below(int n) { return n >= kW ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

float half_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Chunk readers of one record per format: full(i) is values [i, i + 16),
// part(i, m) the lanes of m among them, the others zero. Each is one pointer
// (and int8 its scale), so a group's 16 readers fit a small array.
struct F32Record {
  const float* x = nullptr;
  F32Record() = default;
  explicit F32Record(const uint8_t* rec) : x(reinterpret_cast<const float*>(rec)) {}
  __m512 full(int i) const { return _mm512_loadu_ps(x + i); }
  __m512 part(int i, __mmask16 m) const { return _mm512_maskz_loadu_ps(m, x + i); }
};

struct F16Record {
  const uint8_t* x = nullptr;
  F16Record() = default;
  explicit F16Record(const uint8_t* rec) : x(rec) {}
  __m512 full(int i) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i)));
  }
  __m512 part(int i, __mmask16 m) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + 2 * i));
  }
};

struct Bf16Record {
  const uint8_t* x = nullptr;
  Bf16Record() = default;
  explicit Bf16Record(const uint8_t* rec) : x(rec) {}
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  __m512 full(int i) const {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i)));
  }
  __m512 part(int i, __mmask16 m) const { return widen(_mm256_maskz_loadu_epi16(m, x + 2 * i)); }
};

struct Int8Record {
  const uint8_t* x = nullptr;
  float d = 0;  // the record's scale
  Int8Record() = default;
  explicit Int8Record(const uint8_t* rec) : x(rec + 2), d(half_at(rec)) {}
  __m512 full(int i) const {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(d));
  }
  __m512 part(int i, __mmask16 m) const {
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, x + i))),
                         _mm512_set1_ps(d));
  }
};

// The m records of a group → buf at position t's row of every chunk.
template <typename Record>
void decode_rows(const uint8_t* const* recs, int m, int hd, float* buf) {
  const int full = hd / kW * kW;
  const __mmask16 tail = lanes_below(hd - full);
  for (int t = 0; t < m; ++t) {
    const Record rec(recs[t]);
    float* dst = buf + t * kW;
    int i = 0;
    for (; i < full; i += kW, dst += kChunkFloats) _mm512_store_ps(dst, rec.full(i));
    if (i < hd) _mm512_store_ps(dst, rec.part(i, tail));
  }
}

// q4: groups of 32 values in 20 bytes (kv_q4.h); low nibbles are values 0-15,
// high nibbles 16-31, each x = n·d + m.
void decode_rows_q4(const uint8_t* const* recs, int m, int hd, float* buf) {
  const __m512i low4 = _mm512_set1_epi32(0x0f);
  for (int t = 0; t < m; ++t) {
    const uint8_t* rec = recs[t];
    float* dst = buf + t * kW;
    for (int i = 0; i < hd; i += 2 * kW, rec += 20, dst += 2 * kChunkFloats) {
      const __m512 d = _mm512_set1_ps(half_at(rec));
      const __m512 offset = _mm512_set1_ps(half_at(rec + 2));
      const __m512i w =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 4)));
      const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(w, low4));
      const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(w, 4));
      _mm512_store_ps(dst, _mm512_add_ps(_mm512_mul_ps(lo, d), offset));
      _mm512_store_ps(dst + kChunkFloats, _mm512_add_ps(_mm512_mul_ps(hi, d), offset));
    }
  }
}

// The m records of a group → buf [chunks][16][16] (the arithmetic of
// kv_decode_head); rows m..15 zero, so their scores are finite (and then
// masked out).
void decode_group(KvDtype type, const uint8_t* const* recs, int m, int hd, float* buf) {
  switch (type) {
    case KvDtype::F32:
      decode_rows<F32Record>(recs, m, hd, buf);
      break;
    case KvDtype::F16:
      decode_rows<F16Record>(recs, m, hd, buf);
      break;
    case KvDtype::BF16:
      decode_rows<Bf16Record>(recs, m, hd, buf);
      break;
    case KvDtype::Int8:
      decode_rows<Int8Record>(recs, m, hd, buf);
      break;
    case KvDtype::Q4:
      decode_rows_q4(recs, m, hd, buf);
      break;
  }
  if (m == kW) return;
  for (int c = 0; c * kW < hd; ++c)
    for (int t = m; t < kW; ++t)
      _mm512_store_ps(buf + c * kChunkFloats + t * kW, _mm512_setzero_ps());
}

// Where the kernels read chunk [i, i + 16) of a group's position t (t < 16).
// In place: the records themselves, positions past the group's end pointing
// at its last record (their scores are masked out, their V weights are 0).
template <typename Record>
struct RecordRows {
  Record rec[kW];
  RecordRows(const uint8_t* const* recs, int m) {
    for (int t = 0; t < kW; ++t) rec[t] = Record(recs[t < m ? t : m - 1]);
  }
  __m512 chunk(int t, int i) const { return rec[t].full(i); }
};

// Decoded: the chunk-major buffer of decode_group.
struct DecodedRows {
  const float* buf;
  __m512 chunk(int t, int i) const { return _mm512_load_ps(buf + (i + t) * kW); }
};

// fn(rows) with the reader of the group's m records (1 ≤ m ≤ 16).
template <typename Fn>
void with_rows(KvDtype type, const uint8_t* const* recs, int m, int hd, float* buf, const Fn& fn) {
  if (hd % kW == 0) switch (type) {
      case KvDtype::F32:
        return fn(RecordRows<F32Record>(recs, m));
      case KvDtype::F16:
        return fn(RecordRows<F16Record>(recs, m));
      case KvDtype::BF16:
        return fn(RecordRows<Bf16Record>(recs, m));
      case KvDtype::Int8:
        return fn(RecordRows<Int8Record>(recs, m));
      case KvDtype::Q4:
        break;
    }
  decode_group(type, recs, m, hd, buf);
  fn(DecodedRows{buf});
}

// One level of the fold of 16 per-position registers into one: lanes where
// kFromB is set come from b, the others from a, and each lane adds the lane
// 1, 2, 4 or 8 (levels 0-3) away, so the result holds a's sums in the lanes
// a keeps and b's in the others. After level 3, lane t sums all of p[t].
constexpr __mmask16 kFromB[4] = {0xAAAA, 0xCCCC, 0xF0F0, 0xFF00};

// Lane l of the partner gather: lane l ^ span of b where kFromB has l, else of a.
template <int kLevel>
__m512i partner_index() {
  constexpr int kSpan = 1 << kLevel;
  alignas(64) int idx[kW];
  for (int l = 0; l < kW; ++l) idx[l] = (l ^ kSpan) | ((kFromB[kLevel] >> l) & 1 ? kW : 0);
  return _mm512_load_si512(idx);
}

template <int kLevel>
[[gnu::always_inline]] inline __m512 fold(__m512 a, __m512 b) {
  const __m512 kept = _mm512_mask_blend_ps(kFromB[kLevel], a, b);
  return _mm512_add_ps(kept, _mm512_permutex2var_ps(a, partner_index<kLevel>(), b));
}

// Levels 0-2 of the fold of 8 per-position registers p[0..8): lane r and
// lane 8 + r of the result sum half of p[r] each; p is clobbered.
[[gnu::always_inline]] inline __m512 fold8(__m512* p) {
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) p[i] = fold<0>(p[2 * i], p[2 * i + 1]);
#pragma GCC unroll 8
  for (int i = 0; i < 2; ++i) p[i] = fold<1>(p[2 * i], p[2 * i + 1]);
  return fold<2>(p[0], p[1]);
}

// For kH heads (queries hd apart) and positions [8·half, 8·half + 8) of a
// group: the fold8 of each head's partial products, the products of one
// position summed chunk by chunk in chunk order. A K chunk is read once for
// all kH heads (8 kH accumulators + kH queries + 1 ≤ 28 registers).
template <typename Rows, int kH>
void fold_half_group(const Rows& rows, const float* q, int hd, int half, __m512* folded) {
  __m512 p[kH][8];
#pragma GCC unroll 8
  for (int h = 0; h < kH; ++h)
#pragma GCC unroll 8
    for (int t = 0; t < 8; ++t) p[h][t] = _mm512_setzero_ps();
  for (int i = 0; i < hd; i += kW) {
    const __mmask16 lanes = lanes_below(hd - i);
    __m512 qc[kH];
#pragma GCC unroll 8
    for (int h = 0; h < kH; ++h) qc[h] = _mm512_maskz_loadu_ps(lanes, q + h * hd + i);
#pragma GCC unroll 8
    for (int t = 0; t < 8; ++t) {
      const __m512 k = rows.chunk(half * 8 + t, i);
#pragma GCC unroll 8
      for (int h = 0; h < kH; ++h) p[h][t] = _mm512_fmadd_ps(qc[h], k, p[h][t]);
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < kH; ++h) folded[h] = fold8(p[h]);
}

// out[h][0..16) (rows kAttentionTile apart) = scale · q[h]·K[t] for kH heads
// over a group: lane t of fold<3>(first half, second half) sums all of
// position t's products.
template <typename Rows, int kH>
void score_heads(const Rows& rows, const float* q, int hd, float scale, float* out) {
  __m512 lo[kH], hi[kH];
  fold_half_group<Rows, kH>(rows, q, hd, 0, lo);
  fold_half_group<Rows, kH>(rows, q, hd, 1, hi);
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int h = 0; h < kH; ++h)
    _mm512_storeu_ps(out + h * kAttentionTile, _mm512_mul_ps(fold<3>(lo[h], hi[h]), vscale));
}

// Every head's 16 scores of a group, kScoreHeads heads per pass over it.
template <typename Rows>
void score_group(const Rows& rows, const float* q, int n_q, int hd, float scale, float* out) {
  static_assert(kScoreHeads == 3);
  int j = 0;
  for (; j + 3 <= n_q; j += 3)
    score_heads<Rows, 3>(rows, q + size_t(j) * size_t(hd), hd, scale, out + j * kAttentionTile);
  if (n_q - j == 2)
    score_heads<Rows, 2>(rows, q + size_t(j) * size_t(hd), hd, scale, out + j * kAttentionTile);
  if (n_q - j == 1)
    score_heads<Rows, 1>(rows, q + size_t(j) * size_t(hd), hd, scale, out + j * kAttentionTile);
}

// e^x for x ≤ 0 (scores minus their running max); x < -87 gives ~1e-38.
__m512 exp_nonpositive(__m512 x) { return avx512_exp(_mm512_max_ps(x, _mm512_set1_ps(-87.0f))); }

// The online-softmax update of one head over its n scores s[0..n): s becomes
// the weights e^(s - new max) (zero past n, up to the next multiple of 16),
// running max and sum are updated and acc[0..hd) is rescaled.
void softmax_update(float* s, int n, float* running_max, float* running_sum, float* acc, int hd) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int i = 0; i < n; i += kW)
    mx = _mm512_mask_max_ps(mx, lanes_below(n - i), mx, _mm512_loadu_ps(s + i));
  const float old_max = *running_max;
  const float tile_max = _mm512_reduce_max_ps(mx);
  const float new_max = old_max > tile_max ? old_max : tile_max;
  const float correction = expf(old_max - new_max);  // 0 on the first tile
  const __m512 vmax = _mm512_set1_ps(new_max);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < n; i += kW) {
    const __m512 e = _mm512_maskz_mov_ps(
        lanes_below(n - i), exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(s + i), vmax)));
    _mm512_storeu_ps(s + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  *running_sum = *running_sum * correction + _mm512_reduce_add_ps(sum);
  *running_max = new_max;
  if (correction == 1.0f) return;
  const __m512 c = _mm512_set1_ps(correction);
  for (int i = 0; i < hd; i += kW) {
    const __mmask16 m = lanes_below(hd - i);
    _mm512_mask_storeu_ps(acc + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, acc + i), c));
  }
}

// acc[b][c] += Σ_t w[b][t] · V[t][c] over positions [0, m) of a group (m
// even: an odd group's extra position has weight 0), for kB heads (acc rows
// hd apart, weight rows kAttentionTile apart) and kC chunks from value i0 on
// (acc: at value i0 of head 0). Even and odd positions go to separate partial
// sums, added at the end.
template <typename Rows, int kB, int kC>
void accumulate_block(const Rows& rows, int m, const float* w, float* acc, int hd, int i0) {
  __mmask16 lanes[kC];
  __m512 even[kB][kC], odd[kB][kC];
#pragma GCC unroll 8
  for (int c = 0; c < kC; ++c) lanes[c] = lanes_below(hd - i0 - c * kW);
#pragma GCC unroll 8
  for (int b = 0; b < kB; ++b)
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) {
      even[b][c] = _mm512_maskz_loadu_ps(lanes[c], acc + b * hd + c * kW);
      odd[b][c] = _mm512_setzero_ps();
    }
  for (int t = 0; t < m; t += 2) {
    __m512 w0[kB], w1[kB];
#pragma GCC unroll 8
    for (int b = 0; b < kB; ++b) {
      w0[b] = _mm512_set1_ps(w[b * kAttentionTile + t]);
      w1[b] = _mm512_set1_ps(w[b * kAttentionTile + t + 1]);
    }
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) {
      const __m512 v0 = rows.chunk(t, i0 + c * kW);
      const __m512 v1 = rows.chunk(t + 1, i0 + c * kW);
#pragma GCC unroll 8
      for (int b = 0; b < kB; ++b) {
        even[b][c] = _mm512_fmadd_ps(w0[b], v0, even[b][c]);
        odd[b][c] = _mm512_fmadd_ps(w1[b], v1, odd[b][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < kB; ++b)
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c)
      _mm512_mask_storeu_ps(acc + b * hd + c * kW, lanes[c], _mm512_add_ps(even[b][c], odd[b][c]));
}

template <typename Rows, int kB>
void accumulate_heads(const Rows& rows, int m, const float* w, float* acc, int hd) {
  const int chunks = (hd + kW - 1) / kW;
  int c = 0;
  for (; c + kValueChunks <= chunks; c += kValueChunks)
    accumulate_block<Rows, kB, kValueChunks>(rows, m, w, acc + c * kW, hd, c * kW);
  if (c < chunks) accumulate_block<Rows, kB, 1>(rows, m, w, acc + c * kW, hd, c * kW);
}

// acc[j] += Σ_t w[j][t] · V[t] for every head over a group's m positions.
template <typename Rows>
void accumulate_group(const Rows& rows, int m, const float* w, float* acc, int n_q, int hd) {
  static_assert(kValueHeads == 4 && kValueChunks == 2);
  m += m & 1;
  for (int j = 0; j < n_q; j += kValueHeads) {
    const float* wj = w + j * kAttentionTile;
    float* aj = acc + size_t(j) * size_t(hd);
    switch (n_q - j) {
      case 1:
        accumulate_heads<Rows, 1>(rows, m, wj, aj, hd);
        break;
      case 2:
        accumulate_heads<Rows, 2>(rows, m, wj, aj, hd);
        break;
      case 3:
        accumulate_heads<Rows, 3>(rows, m, wj, aj, hd);
        break;
      default:
        accumulate_heads<Rows, 4>(rows, m, wj, aj, hd);
    }
  }
}

}  // namespace

void attend_tile_avx512(const TileJob& job) {
  const int hd = job.head_dim;
  if (hd > kMaxHeadDim) {
    attend_tile_scalar(job);
    return;
  }
  alignas(64) float buf[kMaxHeadDim * kW];  // a group decoded: [chunks][16 positions][16]
  for (int g = 0; g < job.n; g += kW) {
    const int m = job.n - g < kW ? job.n - g : kW;
    with_rows(job.format.k, job.k_rows + g, m, hd, buf, [&](const auto& rows) {
      score_group(rows, job.q, job.n_q, hd, job.scale, job.scores + g);
    });
  }
  soft_cap_scores(job);
  for (int j = 0; j < job.n_q; ++j)
    softmax_update(job.scores + j * kAttentionTile, job.n, job.running_max + j, job.running_sum + j,
                   job.acc + size_t(j) * size_t(hd), hd);
  for (int g = 0; g < job.n; g += kW) {
    const int m = job.n - g < kW ? job.n - g : kW;
    with_rows(job.format.v, job.v_rows + g, m, hd, buf, [&](const auto& rows) {
      accumulate_group(rows, m, job.scores + g, job.acc, job.n_q, hd);
    });
  }
}

}  // namespace kvforge::attention_detail
