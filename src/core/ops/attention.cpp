#include "core/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/cpu_features.h"
#include "core/ops/attention_tile.h"

namespace kvforge {
namespace {

using attention_detail::TileJob;
using TileFn = void (*)(const TileJob&);

TileFn tile_function() {
  switch (simd_level()) {
    case SimdLevel::Avx512:
      return attention_detail::attend_tile_avx512;
    case SimdLevel::Avx2:
      return attention_detail::attend_tile_avx2;
    case SimdLevel::Scalar:
      break;
  }
  return attention_detail::attend_tile_scalar;
}

// Walks the positions of the spans in order, yielding each one's K and V
// record of one kv head.
//
// The records are also prefetched: a tile's pointers are all gathered
// before its arithmetic starts, so its records arrive in parallel instead of
// one memory latency each (a head's records are strided by the other heads'
// records: the hardware prefetcher stops at every page). Every line is
// prefetched (counting on the core to fetch the other line of an aligned
// pair was slower), into L2 (T1) rather than L1, where the current tile's
// records need the room (docs/bench/design-measurements.md).
class SpanCursor {
 public:
  SpanCursor(const KvView& kv, int kv_head, KvFormat format, int head_dim)
      : spans_(kv.spans),
        n_spans_(kv.n_spans),
        kv_head_(size_t(kv_head)),
        k_bytes_(kv_head_bytes(format.k, head_dim)),
        v_bytes_(kv_head_bytes(format.v, head_dim)),
        pos_(kv.first) {}

  // False past the last span (the caller promised enough positions; stay in bounds anyway).
  bool next(const uint8_t** k, const uint8_t** v) { return take(1, k, v) == 1; }

  // Moves on to position `pos` (never back).
  void skip_to(int32_t pos) {
    while (pos_ < pos) {
      while (span_ < n_spans_ && in_span_ >= spans_[span_].n) {
        ++span_;
        in_span_ = 0;
      }
      if (span_ == n_spans_) return;
      const int32_t m = std::min(pos - pos_, spans_[span_].n - in_span_);
      in_span_ += m;
      pos_ += m;
    }
  }

  // The next `want` positions' records into k[0..), v[0..); returns how many
  // there were (fewer only past the last span).
  int take(int want, const uint8_t** k, const uint8_t** v) {
    int got = 0;
    while (got < want) {
      while (span_ < n_spans_ && in_span_ >= spans_[span_].n) {
        ++span_;
        in_span_ = 0;
      }
      if (span_ == n_spans_) break;
      const KvSpan& sp = spans_[span_];
      const int m = std::min(want - got, int(sp.n - in_span_));
      const size_t pos = size_t(in_span_);
      walk(sp.k + pos * sp.k_pos_stride + kv_head_ * sp.k_head_stride, sp.k_pos_stride, k_bytes_, m,
           k + got);
      walk(sp.v + pos * sp.v_pos_stride + kv_head_ * sp.v_head_stride, sp.v_pos_stride, v_bytes_, m,
           v + got);
      in_span_ += m;
      got += m;
    }
    pos_ += got;
    return got;
  }

 private:
  const KvSpan* spans_;
  size_t n_spans_;
  size_t kv_head_;
  size_t k_bytes_, v_bytes_;  // one record
  int32_t pos_;               // sequence position of the next record
  size_t span_ = 0;
  int32_t in_span_ = 0;  // position inside spans_[span_]

  // m records from `first`, `stride` apart, of `bytes` each: their pointers
  // and the prefetches of their lines.
  static void walk(const uint8_t* first, size_t stride, size_t bytes, int m, const uint8_t** out) {
    for (int i = 0; i < m; ++i) {
      out[i] = first + size_t(i) * stride;
      for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(out[i] + off, 0, 2);
    }
  }
};

// The online-softmax state of up to max_heads heads in scratch; with
// gather, room for their queries too (attention_queries_scratch_floats).
struct HeadState {
  float* acc;          // [heads][head_dim] running Σ weight·V
  float* row;          // [head_dim] one decoded record
  float* scores;       // [heads][kAttentionTile]
  float* running_max;  // [heads]
  float* running_sum;  // [heads]
  float* queries;      // [heads][head_dim] (attend_queries gathers its queries here)

  HeadState(float* scratch, int n_heads, int head_dim, int max_heads, bool gather) {
    const size_t kMax = size_t(max_heads);
    const size_t hd = size_t(head_dim);
    acc = scratch;
    queries = acc + kMax * hd;
    row = queries + (gather ? kMax * hd : 0);
    scores = row + hd;
    running_max = scores + kMax * kAttentionTile;
    running_sum = running_max + kMax;
    std::fill(acc, acc + size_t(n_heads) * hd, 0.0f);
    std::fill(running_max, running_max + n_heads, -INFINITY);
    std::fill(running_sum, running_sum + n_heads, 0.0f);
  }
  // The job for heads [j0, j0 + n) with queries q ([n][head_dim]).
  TileJob job(const float* q, int j0, int n, int head_dim, KvFormat format, Scoring scoring) const {
    TileJob job;
    job.q = q;
    job.n_q = n;
    job.head_dim = head_dim;
    job.format = format;
    job.scale = scoring.scale;
    job.softcap = scoring.softcap;
    job.acc = acc + size_t(j0) * size_t(head_dim);
    job.running_max = running_max + j0;
    job.running_sum = running_sum + j0;
    job.scores = scores;
    job.row = row;
    return job;
  }
  // out[j] = acc[j] / sum[j] for heads [j0, j0 + n); with sinks ([n], head
  // j0 first), each sink joins the softmax as one more score with no value.
  void finish(int j0, int n, int head_dim, float* out, const float* sinks) const {
    const size_t hd = size_t(head_dim);
    for (int j = j0; j < j0 + n; ++j) {
      float inv = 1.0f / running_sum[j];
      if (sinks) {
        const float sink = sinks[j - j0], m = std::max(running_max[j], sink);
        const float keep = std::exp(running_max[j] - m);
        inv = keep / (running_sum[j] * keep + std::exp(sink - m));
      }
      const float* a = acc + size_t(j) * hd;
      float* o = out + size_t(j - j0) * hd;
      for (size_t d = 0; d < hd; ++d) o[d] = a[d] * inv;
    }
  }
};

// The first tile (a multiple of kAttentionTile) holding position `pos`.
int32_t tile_start(int32_t pos) { return pos / kAttentionTile * kAttentionTile; }

// Up to kAttentionHeadsPerPass heads over all tiles of `keys`: one read of the records.
void attend_pass(const float* q, int n_q, const KvView& kv, KeyRange keys, int kv_head,
                 int head_dim, KvFormat format, Scoring scoring, float* out, float* scratch,
                 const uint8_t* mask, TileFn tile) {
  constexpr int kTile = kAttentionTile;
  const HeadState state(scratch, n_q, head_dim, kAttentionHeadsPerPass, /*gather=*/false);
  TileJob job = state.job(q, 0, n_q, head_dim, format, scoring);
  // Tiles are cut at absolute positions (multiples of kTile from 0), not at
  // span edges, so the sums are the same bits however the cache is split
  // into blocks; masked positions are dropped before the tile code sees them.
  const uint8_t* k_rows[kTile];
  const uint8_t* v_rows[kTile];
  job.k_rows = k_rows;
  job.v_rows = v_rows;
  SpanCursor cursor(kv, kv_head, format, head_dim);
  for (int32_t t0 = tile_start(keys.begin); t0 < keys.end; t0 += kTile) {
    const int32_t w0 = std::max(t0, keys.begin);
    const int32_t tn = std::min<int32_t>(t0 + kTile, keys.end) - w0;
    cursor.skip_to(w0);
    int n_valid = 0;
    if (!mask) {
      n_valid = cursor.take(tn, k_rows, v_rows);
    } else {
      for (int32_t t = 0; t < tn; ++t) {
        if (!cursor.next(&k_rows[n_valid], &v_rows[n_valid])) break;
        if (mask[w0 + t]) ++n_valid;
      }
    }
    if (n_valid == 0) continue;
    job.n = n_valid;
    tile(job);
  }
  state.finish(0, n_q, head_dim, out, scoring.sinks);
}

}  // namespace

void attend_heads(const float* q, int n_q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                  int kv_head, int head_dim, KvFormat format, float scale, float* out,
                  float* scratch, const uint8_t* mask, float softcap) {
  const TileFn tile = tile_function();
  const KvView kv{spans, n_spans, 0};
  for (int j0 = 0; j0 < n_q; j0 += kAttentionHeadsPerPass) {
    const int n = std::min(kAttentionHeadsPerPass, n_q - j0);
    const size_t offset = size_t(j0) * size_t(head_dim);
    attend_pass(q + offset, n, kv, {0, n_keys}, kv_head, head_dim, format, {scale, softcap},
                out + offset, scratch, mask, tile);
  }
}

void attend_queries(const float* q, size_t q_stride, int n_q, const KeyRange* keys, int n_queries,
                    const KvView& kv, int kv_head, int head_dim, KvFormat format, Scoring scoring,
                    float* out, size_t out_stride, float* scratch) {
  constexpr int kTile = kAttentionTile;
  const size_t hd = size_t(head_dim);
  const TileFn tile = tile_function();
  if (n_q * n_queries > kAttentionMaxStackedHeads) {  // more heads than the scratch holds
    for (int i = 0; i < n_queries; ++i)
      for (int j0 = 0; j0 < n_q; j0 += kAttentionHeadsPerPass) {
        const int n = std::min(kAttentionHeadsPerPass, n_q - j0);
        const size_t offset = size_t(j0) * hd;
        Scoring heads = scoring;
        if (heads.sinks) heads.sinks += j0;
        attend_pass(q + size_t(i) * q_stride + offset, n, kv, keys[i], kv_head, head_dim, format,
                    heads, out + size_t(i) * out_stride + offset, scratch, nullptr, tile);
      }
    return;
  }
  const HeadState state(scratch, n_q * n_queries, head_dim, kAttentionMaxStackedHeads,
                        /*gather=*/true);
  // Query i's heads are rows [i * n_q, (i + 1) * n_q) of the stacked state.
  for (int i = 0; i < n_queries; ++i)
    std::copy(q + size_t(i) * q_stride, q + size_t(i) * q_stride + size_t(n_q) * hd,
              state.queries + size_t(i) * size_t(n_q) * hd);
  const uint8_t* k_rows[kTile];
  const uint8_t* v_rows[kTile];
  SpanCursor cursor(kv, kv_head, format, head_dim);
  const int32_t lo = keys[0].begin, hi = keys[n_queries - 1].end;
  for (int32_t t0 = tile_start(lo); t0 < hi; t0 += kTile) {
    const int32_t w0 = std::max(t0, lo);
    cursor.skip_to(w0);
    const int32_t n = cursor.take(std::min<int32_t>(t0 + kTile, hi) - w0, k_rows, v_rows);
    // Alone, query i's tile here holds its positions in [t0, t0 + kTile):
    // rows [a, b) of the walked ones. Consecutive queries with the same rows
    // go through them together; ranges being ascending, those are runs.
    const auto rows_of = [&](int i) {
      return std::pair{std::max(keys[i].begin, w0) - w0, std::min(keys[i].end, w0 + n) - w0};
    };
    for (int i = 0; i < n_queries;) {
      const auto [a, b] = rows_of(i);
      int count = 1;
      while (i + count < n_queries && rows_of(i + count) == std::pair{a, b}) ++count;
      if (b > a) {
        TileJob job = state.job(state.queries + size_t(i) * size_t(n_q) * hd, i * n_q, count * n_q,
                                head_dim, format, scoring);
        job.k_rows = k_rows + a;
        job.v_rows = v_rows + a;
        job.n = int(b - a);
        tile(job);
      }
      i += count;
    }
  }
  for (int i = 0; i < n_queries; ++i)
    state.finish(i * n_q, n_q, head_dim, out + size_t(i) * out_stride, scoring.sinks);
}

}  // namespace kvforge
