// AVX2 + FMA + F16C tile step (8 floats per register), the structure of
// attention_avx512.cpp at half the width. Positions go in groups of 8. When
// head_dim is a multiple of 8, f32 / f16 / bf16 / int8 records are read
// straight into registers where they are used; q4 records, and every format
// at other head sizes, are first decoded into an L1 buffer laid out
// chunk-major, [head_dim / 8][8 positions][8] with zero lanes past head_dim.
// Either way a record's values are the same bits as kv_decode_head gives.
//
// Scores: per query head, one partial-product register per position (its
// chunks multiplied and summed in chunk order), folded by a 3-level
// blend/swap/add tree into one register holding the group's 8 scores. Two
// heads share each K chunk, taking the positions 4 at a time (a level-2 fold
// joins the halves: the same arithmetic as 8 at a time).
// V: the accumulators of a block of up to 2 heads × 2 chunks stay in
// registers across a group, two partial sums per (head, chunk), even and odd
// positions.
//
// Every head's arithmetic depends only on its own query, acc and the job's
// records, never on n_q or on how heads are blocked, so a head alone and in
// a group give the same bits. exp is a degree-6 polynomial after range
// reduction (relative error ~2e-7).
//
// Compiled with AVX2 flags: internal linkage only, no std templates, no
// inline functions shared with other TUs (see core/cpu_features.h).
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/ops/attention.h"
#include "core/ops/attention_tile.h"
#include "core/ops/avx2_exp.h"

namespace kvforge::attention_detail {
namespace {

constexpr int kW = 8;                  // floats per register, and positions per score group
constexpr int kChunkFloats = kW * kW;  // one chunk of a group in the buffer: [8 positions][8]
// Heads whose decoded group would not fit the stack buffer (16 KiB) take the
// scalar tile step; LLaMA-family heads are 64-256 wide.
constexpr int kMaxHeadDim = 512;

// All-ones in lanes [0, n), zero elsewhere (a mask for maskload / maskstore / blendv).
__m256i lanes_below(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

float half_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

float bf16_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

// Chunk readers of one record per format: full(i) is values [i, i + 8),
// one(i) the single value i (for head sizes that are not a multiple of 8).
struct F32Record {
  const float* x = nullptr;
  F32Record() = default;
  explicit F32Record(const uint8_t* rec) : x(reinterpret_cast<const float*>(rec)) {}
  __m256 full(int i) const { return _mm256_loadu_ps(x + i); }
  float one(int i) const { return x[i]; }
};

struct F16Record {
  const uint8_t* x = nullptr;
  F16Record() = default;
  explicit F16Record(const uint8_t* rec) : x(rec) {}
  __m256 full(int i) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
  }
  float one(int i) const { return half_at(x + 2 * i); }
};

struct Bf16Record {
  const uint8_t* x = nullptr;
  Bf16Record() = default;
  explicit Bf16Record(const uint8_t* rec) : x(rec) {}
  __m256 full(int i) const {
    const __m256i w =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  float one(int i) const { return bf16_at(x + 2 * i); }
};

struct Int8Record {
  const int8_t* x = nullptr;
  float d = 0;  // the record's scale
  Int8Record() = default;
  explicit Int8Record(const uint8_t* rec)
      : x(reinterpret_cast<const int8_t*>(rec + 2)), d(half_at(rec)) {}
  __m256 full(int i) const {
    const __m256i w =
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(w), _mm256_set1_ps(d));
  }
  float one(int i) const { return float(x[i]) * d; }
};

// The m records of a group → buf at position t's row of every chunk.
template <typename Record>
void decode_rows(const uint8_t* const* recs, int m, int hd, float* buf) {
  const int full = hd / kW * kW;
  for (int t = 0; t < m; ++t) {
    const Record rec(recs[t]);
    float* dst = buf + t * kW;
    int i = 0;
    for (; i < full; i += kW, dst += kChunkFloats) _mm256_store_ps(dst, rec.full(i));
    if (i == hd) continue;
    alignas(32) float tail[kW] = {};
    for (int k = 0; i + k < hd; ++k) tail[k] = rec.one(i + k);
    _mm256_store_ps(dst, _mm256_load_ps(tail));
  }
}

// q4: groups of 32 values in 20 bytes (kv_q4.h); low nibbles are values 0-15,
// high nibbles 16-31, each x = n·d + m.
void decode_rows_q4(const uint8_t* const* recs, int m, int hd, float* buf) {
  const __m256i low4 = _mm256_set1_epi32(0x0f);
  for (int t = 0; t < m; ++t) {
    const uint8_t* rec = recs[t];
    float* dst = buf + t * kW;
    for (int i = 0; i < hd; i += 4 * kW, rec += 20, dst += 4 * kChunkFloats) {
      const __m256 d = _mm256_set1_ps(half_at(rec));
      const __m256 offset = _mm256_set1_ps(half_at(rec + 2));
      for (int h = 0; h < 2; ++h) {  // bytes 8h..8h+7: values 8h.. (low) and 16 + 8h.. (high)
        const __m256i w = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rec + 4 + 8 * h)));
        const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, low4));
        const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4));
        _mm256_store_ps(dst + h * kChunkFloats, _mm256_add_ps(_mm256_mul_ps(lo, d), offset));
        _mm256_store_ps(dst + (2 + h) * kChunkFloats, _mm256_add_ps(_mm256_mul_ps(hi, d), offset));
      }
    }
  }
}

// The m records of a group → buf [chunks][8][8] (the arithmetic of
// kv_decode_head); rows m..7 zero, so their scores are finite (and then
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
      _mm256_store_ps(buf + c * kChunkFloats + t * kW, _mm256_setzero_ps());
}

// Where the kernels read chunk [i, i + 8) of a group's position t (t < 8).
// In place: the records themselves, positions past the group's end pointing
// at its last record (their scores are masked out, their V weights are 0).
template <typename Record>
struct RecordRows {
  Record rec[kW];
  RecordRows(const uint8_t* const* recs, int m) {
    for (int t = 0; t < kW; ++t) rec[t] = Record(recs[t < m ? t : m - 1]);
  }
  __m256 chunk(int t, int i) const { return rec[t].full(i); }
};

// Decoded: the chunk-major buffer of decode_group.
struct DecodedRows {
  const float* buf;
  __m256 chunk(int t, int i) const { return _mm256_load_ps(buf + (i + t) * kW); }
};

// fn(rows) with the reader of the group's m records (1 ≤ m ≤ 8).
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

// One level of the fold of 8 per-position registers into one: lanes of
// kFromB come from b, the others from a, and each lane adds the lane 1, 2 or
// 4 (levels 0-2) away, so the result holds a's sums in the lanes a keeps and
// b's in the others. After level 2, lane t sums all of p[t].
template <int kLevel>
[[gnu::always_inline]] inline __m256 fold(__m256 a, __m256 b) {
  constexpr int kFromB = kLevel == 0 ? 0xAA : kLevel == 1 ? 0xCC : 0xF0;
  const __m256 kept = _mm256_blend_ps(a, b, kFromB);
  const __m256 moved = _mm256_blend_ps(b, a, kFromB);
  __m256 swapped;
  if constexpr (kLevel == 0) swapped = _mm256_permute_ps(moved, 0xB1);  // lanes 1 0 3 2 ...
  if constexpr (kLevel == 1) swapped = _mm256_permute_ps(moved, 0x4E);  // lanes 2 3 0 1 ...
  if constexpr (kLevel == 2) swapped = _mm256_permute2f128_ps(moved, moved, 0x01);  // halves
  return _mm256_add_ps(kept, swapped);
}

// Levels 0-1 of the fold of 4 per-position registers: lane r and 4 + r of
// the result sum half of p[r] each.
[[gnu::always_inline]] inline __m256 fold4(const __m256* p) {
  return fold<1>(fold<0>(p[0], p[1]), fold<0>(p[2], p[3]));
}

// For kH heads (queries hd apart) and positions [4·quarter, 4·quarter + 4)
// of a group: the fold4 of each head's partial products, the products of
// one position summed chunk by chunk in chunk order.
template <typename Rows, int kH>
void fold_four_positions(const Rows& rows, const float* q, int hd, int quarter, __m256* folded) {
  __m256 p[kH][4];
#pragma GCC unroll 4
  for (int h = 0; h < kH; ++h)
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) p[h][t] = _mm256_setzero_ps();
  for (int i = 0; i < hd; i += kW) {
    const __m256i lanes = lanes_below(hd - i);
    __m256 qc[kH];
#pragma GCC unroll 4
    for (int h = 0; h < kH; ++h) qc[h] = _mm256_maskload_ps(q + h * hd + i, lanes);
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const __m256 k = rows.chunk(quarter * 4 + t, i);
#pragma GCC unroll 4
      for (int h = 0; h < kH; ++h) p[h][t] = _mm256_fmadd_ps(qc[h], k, p[h][t]);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kH; ++h) folded[h] = fold4(p[h]);
}

// out[h][0..8) (rows kAttentionTile apart) = scale · q[h]·K[t] for kH heads.
template <typename Rows, int kH>
void score_heads(const Rows& rows, const float* q, int hd, float scale, float* out) {
  __m256 lo[kH], hi[kH];
  fold_four_positions<Rows, kH>(rows, q, hd, 0, lo);
  fold_four_positions<Rows, kH>(rows, q, hd, 1, hi);
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int h = 0; h < kH; ++h)
    _mm256_storeu_ps(out + h * kAttentionTile, _mm256_mul_ps(fold<2>(lo[h], hi[h]), vscale));
}

// Every head's 8 scores of a group, two heads per pass over it.
template <typename Rows>
void score_group(const Rows& rows, const float* q, int n_q, int hd, float scale, float* out) {
  int j = 0;
  for (; j + 2 <= n_q; j += 2)
    score_heads<Rows, 2>(rows, q + size_t(j) * size_t(hd), hd, scale, out + j * kAttentionTile);
  if (j < n_q)
    score_heads<Rows, 1>(rows, q + size_t(j) * size_t(hd), hd, scale, out + j * kAttentionTile);
}

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// e^x for x ≤ 0 (scores minus their running max); x < -87 gives ~1e-38.
__m256 exp_nonpositive(__m256 x) { return avx2_exp(_mm256_max_ps(x, _mm256_set1_ps(-87.0f))); }

// The online-softmax update of one head over its n scores s[0..n): s becomes
// the weights e^(s - new max) (zero past n, up to the next multiple of 8),
// running max and sum are updated and acc[0..hd) is rescaled.
void softmax_update(float* s, int n, float* running_max, float* running_sum, float* acc, int hd) {
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  __m256 mx = minus_inf;
  for (int i = 0; i < n; i += kW) {
    const __m256 valid = _mm256_castsi256_ps(lanes_below(n - i));
    mx = _mm256_max_ps(mx, _mm256_blendv_ps(minus_inf, _mm256_loadu_ps(s + i), valid));
  }
  const float old_max = *running_max;
  const float tile_max = hmax(mx);
  const float new_max = old_max > tile_max ? old_max : tile_max;
  const float correction = expf(old_max - new_max);  // 0 on the first tile
  const __m256 vmax = _mm256_set1_ps(new_max);
  __m256 sum = _mm256_setzero_ps();
  for (int i = 0; i < n; i += kW) {
    const __m256 valid = _mm256_castsi256_ps(lanes_below(n - i));
    const __m256 e =
        _mm256_and_ps(valid, exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + i), vmax)));
    _mm256_storeu_ps(s + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  *running_sum = *running_sum * correction + hsum(sum);
  *running_max = new_max;
  if (correction == 1.0f) return;
  const __m256 c = _mm256_set1_ps(correction);
  for (int i = 0; i < hd; i += kW) {
    const __m256i m = lanes_below(hd - i);
    _mm256_maskstore_ps(acc + i, m, _mm256_mul_ps(_mm256_maskload_ps(acc + i, m), c));
  }
}

// acc[b][c] += Σ_t w[b][t] · V[t][c] over positions [0, m) of a group (m
// even: an odd group's extra position has weight 0), for kB heads (acc rows
// hd apart, weight rows kAttentionTile apart) and kC chunks from value i0 on
// (acc: at value i0 of head 0). Even and odd positions go to separate partial
// sums, added at the end.
template <typename Rows, int kB, int kC>
void accumulate_block(const Rows& rows, int m, const float* w, float* acc, int hd, int i0) {
  __m256i lanes[kC];
  __m256 even[kB][kC], odd[kB][kC];
#pragma GCC unroll 4
  for (int c = 0; c < kC; ++c) lanes[c] = lanes_below(hd - i0 - c * kW);
#pragma GCC unroll 4
  for (int b = 0; b < kB; ++b)
#pragma GCC unroll 4
    for (int c = 0; c < kC; ++c) {
      even[b][c] = _mm256_maskload_ps(acc + b * hd + c * kW, lanes[c]);
      odd[b][c] = _mm256_setzero_ps();
    }
  for (int t = 0; t < m; t += 2) {
    __m256 w0[kB], w1[kB];
#pragma GCC unroll 4
    for (int b = 0; b < kB; ++b) {
      w0[b] = _mm256_broadcast_ss(w + b * kAttentionTile + t);
      w1[b] = _mm256_broadcast_ss(w + b * kAttentionTile + t + 1);
    }
#pragma GCC unroll 4
    for (int c = 0; c < kC; ++c) {
      const __m256 v0 = rows.chunk(t, i0 + c * kW);
      const __m256 v1 = rows.chunk(t + 1, i0 + c * kW);
#pragma GCC unroll 4
      for (int b = 0; b < kB; ++b) {
        even[b][c] = _mm256_fmadd_ps(w0[b], v0, even[b][c]);
        odd[b][c] = _mm256_fmadd_ps(w1[b], v1, odd[b][c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int b = 0; b < kB; ++b)
#pragma GCC unroll 4
    for (int c = 0; c < kC; ++c)
      _mm256_maskstore_ps(acc + b * hd + c * kW, lanes[c], _mm256_add_ps(even[b][c], odd[b][c]));
}

template <typename Rows, int kB>
void accumulate_heads(const Rows& rows, int m, const float* w, float* acc, int hd) {
  const int chunks = (hd + kW - 1) / kW;
  int c = 0;
  for (; c + 2 <= chunks; c += 2)
    accumulate_block<Rows, kB, 2>(rows, m, w, acc + c * kW, hd, c * kW);
  if (c < chunks) accumulate_block<Rows, kB, 1>(rows, m, w, acc + c * kW, hd, c * kW);
}

// acc[j] += Σ_t w[j][t] · V[t] for every head over a group's m positions,
// two heads per block.
template <typename Rows>
void accumulate_group(const Rows& rows, int m, const float* w, float* acc, int n_q, int hd) {
  m += m & 1;
  int j = 0;
  for (; j + 2 <= n_q; j += 2)
    accumulate_heads<Rows, 2>(rows, m, w + j * kAttentionTile, acc + size_t(j) * size_t(hd), hd);
  if (j < n_q)
    accumulate_heads<Rows, 1>(rows, m, w + j * kAttentionTile, acc + size_t(j) * size_t(hd), hd);
}

}  // namespace

void attend_tile_avx2(const TileJob& job) {
  const int hd = job.head_dim;
  if (hd > kMaxHeadDim) {
    attend_tile_scalar(job);
    return;
  }
  alignas(32) float buf[kMaxHeadDim * kW];  // a group decoded: [chunks][8 positions][8]
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
