// The SIMD tile step of attention, written once for any register width:
// attention_avx2.cpp and attention_avx512.cpp instantiate attend_tile<Isa>
// with their instruction set (8 or 16 floats per register). Include it only
// from those files: everything here has internal linkage and is compiled
// with the including file's ISA flags (core/cpu_features.h).
//
// Positions go in groups of W (the register width). When head_dim is a
// multiple of W, f32 / f16 / bf16 / int8 records are read straight into
// registers where they are used; q4 records, and every format at other head
// sizes, are first decoded into an L1 buffer laid out chunk-major,
// [head_dim / W][W positions][W] with zero lanes past head_dim. Either way a
// record's values are the same bits as kv_decode_head gives.
//
// Scores: per query head, one partial-product register per position (its
// head_dim/W chunks multiplied and summed in chunk order), then a log2(W)-level
// blend/swap/add fold turns the W registers into one holding the group's W
// scores: no horizontal reduce per score. Up to Isa::kScoreHeads heads share
// each K chunk. V: the accumulators of a block of up to Isa::kValueHeads heads
// × Isa::kValueChunks chunks stay in registers across a group, two partial
// sums per (head, chunk), even and odd positions, so a single head still
// keeps several FMA chains in flight.
//
// Every head's arithmetic depends only on its own query, acc and the job's
// records, never on n_q or on how heads are blocked, so a head alone and in
// a group give the same bits. exp is a degree-6 polynomial after range
// reduction (relative error ~2e-7): results differ from the scalar reference
// only by float rounding.
//
// What an Isa supplies: kW, kScoreHeads, kValueHeads, kValueChunks; the
// register type F and lane mask Mask (lanes_below(n): lanes [0, n)); the
// arithmetic (zero, set1, load / store aligned, loadu / storeu, load_masked
// (zero outside the mask), store_masked, add, sub, mul, max, fmadd, exp,
// reduce_add, reduce_max); max_where(mx, m, x) and zero_unless(m, x) for the
// softmax's masked lanes; fold<level>(a, b), one level of the score fold; the
// record readers F32Record, F16Record, Bf16Record, Int8Record (full(i):
// values [i, i + W)) with tail(rec, i, n) (values [i, i + n), zeros above);
// and decode_rows_q4.
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ops/attention.h"
#include "core/ops/attention_tile.h"

namespace kvforge::attention_detail {
namespace {

// Heads whose decoded group would not fit the stack buffer (32 KiB at W = 16)
// take the scalar tile step; LLaMA-family heads are 64-256 wide.
constexpr int kMaxHeadDim = 512;

constexpr int log2_of(int w) { return w <= 1 ? 0 : 1 + log2_of(w / 2); }

// The m records of a group → buf at position t's row of every chunk.
template <class Isa, typename Record>
void decode_rows(const uint8_t* const* recs, int m, int hd, float* buf) {
  constexpr int kW = Isa::kW;
  const int full = hd / kW * kW;
  for (int t = 0; t < m; ++t) {
    const Record rec(recs[t]);
    float* dst = buf + t * kW;
    int i = 0;
    for (; i < full; i += kW, dst += kW * kW) Isa::store(dst, rec.full(i));
    if (i < hd) Isa::store(dst, Isa::tail(rec, i, hd - i));
  }
}

// The m records of a group → buf [chunks][W][W] (the arithmetic of
// kv_decode_head); rows m..W-1 zero, so their scores are finite (and then
// masked out).
template <class Isa>
void decode_group(KvDtype type, const uint8_t* const* recs, int m, int hd, float* buf) {
  constexpr int kW = Isa::kW;
  switch (type) {
    case KvDtype::F32:
      decode_rows<Isa, typename Isa::F32Record>(recs, m, hd, buf);
      break;
    case KvDtype::F16:
      decode_rows<Isa, typename Isa::F16Record>(recs, m, hd, buf);
      break;
    case KvDtype::BF16:
      decode_rows<Isa, typename Isa::Bf16Record>(recs, m, hd, buf);
      break;
    case KvDtype::Int8:
      decode_rows<Isa, typename Isa::Int8Record>(recs, m, hd, buf);
      break;
    case KvDtype::Q4:
      Isa::decode_rows_q4(recs, m, hd, buf);
      break;
  }
  if (m == kW) return;
  for (int c = 0; c * kW < hd; ++c)
    for (int t = m; t < kW; ++t) Isa::store(buf + c * kW * kW + t * kW, Isa::zero());
}

// Where the kernels read chunk [i, i + W) of a group's position t (t < W).
// In place: the records themselves, positions past the group's end pointing
// at its last record (their scores are masked out, their V weights are 0).
template <class Isa, typename Record>
struct RecordRows {
  Record rec[Isa::kW];
  RecordRows(const uint8_t* const* recs, int m) {
    for (int t = 0; t < Isa::kW; ++t) rec[t] = Record(recs[t < m ? t : m - 1]);
  }
  typename Isa::F chunk(int t, int i) const { return rec[t].full(i); }
};

// Decoded: the chunk-major buffer of decode_group.
template <class Isa>
struct DecodedRows {
  const float* buf;
  typename Isa::F chunk(int t, int i) const { return Isa::load(buf + (i + t) * Isa::kW); }
};

// fn(rows) with the reader of the group's m records (1 ≤ m ≤ W).
template <class Isa, typename Fn>
void with_rows(KvDtype type, const uint8_t* const* recs, int m, int hd, float* buf, const Fn& fn) {
  if (hd % Isa::kW == 0) switch (type) {
      case KvDtype::F32:
        return fn(RecordRows<Isa, typename Isa::F32Record>(recs, m));
      case KvDtype::F16:
        return fn(RecordRows<Isa, typename Isa::F16Record>(recs, m));
      case KvDtype::BF16:
        return fn(RecordRows<Isa, typename Isa::Bf16Record>(recs, m));
      case KvDtype::Int8:
        return fn(RecordRows<Isa, typename Isa::Int8Record>(recs, m));
      case KvDtype::Q4:
        break;
    }
  decode_group<Isa>(type, recs, m, hd, buf);
  fn(DecodedRows<Isa>{buf});
}

// Levels kLevel.. of the fold of kN per-position registers p[0..kN) (kN a
// power of two): after the levels up to log2(kN) - 1, lane r + kN·k of the
// result sums part of p[r]; p is clobbered.
template <class Isa, int kN, int kLevel = 0>
[[gnu::always_inline]] inline typename Isa::F fold_tree(typename Isa::F* p) {
  if constexpr (kN == 1) {
    return p[0];
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < kN / 2; ++i) p[i] = Isa::template fold<kLevel>(p[2 * i], p[2 * i + 1]);
    return fold_tree<Isa, kN / 2, kLevel + 1>(p);
  }
}

// For kH heads (queries hd apart) and positions [W/2·half, W/2·half + W/2)
// of a group: the folded partial products of each head, the products of one
// position summed chunk by chunk in chunk order. A K chunk is read once for
// all kH heads.
template <class Isa, typename Rows, int kH>
void fold_half_group(const Rows& rows, const float* q, int hd, int half, typename Isa::F* folded) {
  using F = typename Isa::F;
  constexpr int kHalf = Isa::kW / 2;
  F p[kH][kHalf];
#pragma GCC unroll 8
  for (int h = 0; h < kH; ++h)
#pragma GCC unroll 8
    for (int t = 0; t < kHalf; ++t) p[h][t] = Isa::zero();
  for (int i = 0; i < hd; i += Isa::kW) {
    const typename Isa::Mask lanes = Isa::lanes_below(hd - i);
    F qc[kH];
#pragma GCC unroll 8
    for (int h = 0; h < kH; ++h) qc[h] = Isa::load_masked(lanes, q + h * hd + i);
#pragma GCC unroll 8
    for (int t = 0; t < kHalf; ++t) {
      const F k = rows.chunk(half * kHalf + t, i);
#pragma GCC unroll 8
      for (int h = 0; h < kH; ++h) p[h][t] = Isa::fmadd(qc[h], k, p[h][t]);
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < kH; ++h) folded[h] = fold_tree<Isa, kHalf>(p[h]);
}

// out[h][0..W) (rows kAttentionTile apart) = scale · q[h]·K[t] for kH heads
// over a group: lane t of the last fold level of (first half, second half)
// sums all of position t's products.
template <class Isa, typename Rows, int kH>
void score_heads(const Rows& rows, const float* q, int hd, float scale, float* out) {
  typename Isa::F lo[kH], hi[kH];
  fold_half_group<Isa, Rows, kH>(rows, q, hd, 0, lo);
  fold_half_group<Isa, Rows, kH>(rows, q, hd, 1, hi);
  const typename Isa::F vscale = Isa::set1(scale);
  constexpr int kLastLevel = log2_of(Isa::kW) - 1;
  for (int h = 0; h < kH; ++h)
    Isa::storeu(out + h * kAttentionTile,
                Isa::mul(Isa::template fold<kLastLevel>(lo[h], hi[h]), vscale));
}

// score_heads for min(n, kH) heads.
template <class Isa, typename Rows, int kH>
void score_up_to(int n, const Rows& rows, const float* q, int hd, float scale, float* out) {
  if constexpr (kH > 1)
    if (n < kH) return score_up_to<Isa, Rows, kH - 1>(n, rows, q, hd, scale, out);
  score_heads<Isa, Rows, kH>(rows, q, hd, scale, out);
}

// Every head's W scores of a group, Isa::kScoreHeads heads per pass over it.
template <class Isa, typename Rows>
void score_group(const Rows& rows, const float* q, int n_q, int hd, float scale, float* out) {
  constexpr int kS = Isa::kScoreHeads;
  for (int j = 0; j < n_q; j += kS)
    score_up_to<Isa, Rows, kS>(n_q - j, rows, q + size_t(j) * size_t(hd), hd, scale,
                               out + j * kAttentionTile);
}

// The online-softmax update of one head over its n scores s[0..n): s becomes
// the weights e^(s - new max) (zero past n, up to the next multiple of W),
// running max and sum are updated and acc[0..hd) is rescaled.
template <class Isa>
void softmax_update(float* s, int n, float* running_max, float* running_sum, float* acc, int hd) {
  using F = typename Isa::F;
  F mx = Isa::set1(-INFINITY);
  for (int i = 0; i < n; i += Isa::kW)
    mx = Isa::max_where(mx, Isa::lanes_below(n - i), Isa::loadu(s + i));
  const float old_max = *running_max;
  const float tile_max = Isa::reduce_max(mx);
  const float new_max = old_max > tile_max ? old_max : tile_max;
  const float correction = expf(old_max - new_max);  // 0 on the first tile
  const F vmax = Isa::set1(new_max);
  F sum = Isa::zero();
  for (int i = 0; i < n; i += Isa::kW) {
    // e^x for x ≤ 0; x < -87 gives ~1e-38.
    const F x = Isa::max(Isa::sub(Isa::loadu(s + i), vmax), Isa::set1(-87.0f));
    const F e = Isa::zero_unless(Isa::lanes_below(n - i), Isa::exp(x));
    Isa::storeu(s + i, e);
    sum = Isa::add(sum, e);
  }
  *running_sum = *running_sum * correction + Isa::reduce_add(sum);
  *running_max = new_max;
  if (correction == 1.0f) return;
  const F c = Isa::set1(correction);
  for (int i = 0; i < hd; i += Isa::kW) {
    const typename Isa::Mask m = Isa::lanes_below(hd - i);
    Isa::store_masked(acc + i, m, Isa::mul(Isa::load_masked(m, acc + i), c));
  }
}

// acc[b][c] += Σ_t w[b][t] · V[t][c] over positions [0, m) of a group (m
// even: an odd group's extra position has weight 0), for kB heads (acc rows
// hd apart, weight rows kAttentionTile apart) and kC chunks from value i0 on
// (acc: at value i0 of head 0). Even and odd positions go to separate partial
// sums, added at the end.
template <class Isa, typename Rows, int kB, int kC>
void accumulate_block(const Rows& rows, int m, const float* w, float* acc, int hd, int i0) {
  using F = typename Isa::F;
  constexpr int kW = Isa::kW;
  typename Isa::Mask lanes[kC];
  F even[kB][kC], odd[kB][kC];
#pragma GCC unroll 8
  for (int c = 0; c < kC; ++c) lanes[c] = Isa::lanes_below(hd - i0 - c * kW);
#pragma GCC unroll 8
  for (int b = 0; b < kB; ++b)
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) {
      even[b][c] = Isa::load_masked(lanes[c], acc + b * hd + c * kW);
      odd[b][c] = Isa::zero();
    }
  for (int t = 0; t < m; t += 2) {
    F w0[kB], w1[kB];
#pragma GCC unroll 8
    for (int b = 0; b < kB; ++b) {
      w0[b] = Isa::set1(w[b * kAttentionTile + t]);
      w1[b] = Isa::set1(w[b * kAttentionTile + t + 1]);
    }
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) {
      const F v0 = rows.chunk(t, i0 + c * kW);
      const F v1 = rows.chunk(t + 1, i0 + c * kW);
#pragma GCC unroll 8
      for (int b = 0; b < kB; ++b) {
        even[b][c] = Isa::fmadd(w0[b], v0, even[b][c]);
        odd[b][c] = Isa::fmadd(w1[b], v1, odd[b][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < kB; ++b)
#pragma GCC unroll 8
    for (int c = 0; c < kC; ++c)
      Isa::store_masked(acc + b * hd + c * kW, lanes[c], Isa::add(even[b][c], odd[b][c]));
}

template <class Isa, typename Rows, int kB>
void accumulate_heads(const Rows& rows, int m, const float* w, float* acc, int hd) {
  constexpr int kW = Isa::kW, kC = Isa::kValueChunks;
  const int chunks = (hd + kW - 1) / kW;
  int c = 0;
  for (; c + kC <= chunks; c += kC)
    accumulate_block<Isa, Rows, kB, kC>(rows, m, w, acc + c * kW, hd, c * kW);
  if (c < chunks) accumulate_block<Isa, Rows, kB, 1>(rows, m, w, acc + c * kW, hd, c * kW);
}

// accumulate_heads for min(n, kB) heads.
template <class Isa, typename Rows, int kB>
void accumulate_up_to(int n, const Rows& rows, int m, const float* w, float* acc, int hd) {
  if constexpr (kB > 1)
    if (n < kB) return accumulate_up_to<Isa, Rows, kB - 1>(n, rows, m, w, acc, hd);
  accumulate_heads<Isa, Rows, kB>(rows, m, w, acc, hd);
}

// acc[j] += Σ_t w[j][t] · V[t] for every head over a group's m positions.
template <class Isa, typename Rows>
void accumulate_group(const Rows& rows, int m, const float* w, float* acc, int n_q, int hd) {
  constexpr int kB = Isa::kValueHeads;
  m += m & 1;
  for (int j = 0; j < n_q; j += kB)
    accumulate_up_to<Isa, Rows, kB>(n_q - j, rows, m, w + j * kAttentionTile,
                                    acc + size_t(j) * size_t(hd), hd);
}

template <class Isa>
void attend_tile(const TileJob& job) {
  constexpr int kW = Isa::kW;
  const int hd = job.head_dim;
  if (hd > kMaxHeadDim) {
    attend_tile_scalar(job);
    return;
  }
  alignas(64) float buf[kMaxHeadDim * kW];  // a group decoded: [chunks][W positions][W]
  for (int g = 0; g < job.n; g += kW) {
    const int m = job.n - g < kW ? job.n - g : kW;
    with_rows<Isa>(job.format.k, job.k_rows + g, m, hd, buf, [&](const auto& rows) {
      score_group<Isa>(rows, job.q, job.n_q, hd, job.scale, job.scores + g);
    });
  }
  soft_cap_scores(job);
  for (int j = 0; j < job.n_q; ++j)
    softmax_update<Isa>(job.scores + j * kAttentionTile, job.n, job.running_max + j,
                        job.running_sum + j, job.acc + size_t(j) * size_t(hd), hd);
  for (int g = 0; g < job.n; g += kW) {
    const int m = job.n - g < kW ? job.n - g : kW;
    with_rows<Isa>(job.format.v, job.v_rows + g, m, hd, buf, [&](const auto& rows) {
      accumulate_group<Isa>(rows, m, job.scores + g, job.acc, job.n_q, hd);
    });
  }
}

}  // namespace
}  // namespace kvforge::attention_detail
