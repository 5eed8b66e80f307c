// Context shift's K re-rotation (kv_shift.h, PagedKvCache::rerotate_k): a K
// row written at position p and re-rotated by delta equals the same
// un-rotated row written at p + delta, per KV format; V is untouched; a
// shared block is refused.
//
// Bounds, as relative L2 error of a row against the f32 row rotated fresh at
// its new position: f32 1e-6 (two float rotations instead of one: a few ulp
// of cos/sin, ~1e-7 measured). The stored formats are compared with the error
// of writing the row fresh at the new position (their own rounding), and may
// add at most one more rounding of the same format: f16 2^-11 and bf16 2^-8
// per value (bounded here at 2x the fresh error plus that step), int8 and q4
// one more quantization (bounded at 2.5x the fresh error, measured 1.3-1.6x).
#include "engine/kv/kv_shift.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kv/paged_kv_cache.h"

namespace kvforge {
namespace {

constexpr int kLayers = 2, kKvHeads = 2, kHeadDim = 32, kBlock = 8, kTokens = 32;

ModelConfig shift_config() {
  ModelConfig c;
  c.n_layer = kLayers;
  c.n_kv_head = kKvHeads;
  c.head_dim = kHeadDim;
  return c;
}

// Un-rotated K rows [layer][pos][head][dim] and V rows, random.
struct Rows {
  std::vector<float> k, v;
  const float* at(const std::vector<float>& x, int layer, int pos) const {
    return x.data() + (size_t(layer) * kTokens + size_t(pos)) * kKvHeads * kHeadDim;
  }
};

Rows random_rows() {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Rows r;
  r.k.resize(size_t(kLayers) * kTokens * kKvHeads * kHeadDim);
  r.v.resize(r.k.size());
  for (float& x : r.k) x = d(rng);
  for (float& x : r.v) x = d(rng);
  return r;
}

// `raw`'s heads rotated at `pos`.
std::vector<float> rotated(const RopeTable& rope, const float* raw, int pos) {
  std::vector<float> out(raw, raw + kKvHeads * kHeadDim), cs(size_t(rope.rope_dim()));
  rope.angles(pos, cs.data());
  rope.apply(out.data(), kKvHeads, kHeadDim, cs.data());
  return out;
}

// Decoded K (or V) of (layer, pos, head) from the cache.
std::vector<float> stored(const PagedKvCache& cache, KvDtype t, int layer, int pos, int head,
                          bool k) {
  std::vector<KvSpan> spans;
  cache.spans(layer, 0, 0, kTokens, spans);
  const KvSpan& s = spans[size_t(pos / kBlock)];
  const int in = pos % kBlock;
  const uint8_t* rec = k ? s.k + size_t(in) * s.k_pos_stride + size_t(head) * s.k_head_stride
                         : s.v + size_t(in) * s.v_pos_stride + size_t(head) * s.v_head_stride;
  std::vector<float> out(kHeadDim);
  kv_decode_head(t, rec, out.data(), kHeadDim);
  return out;
}

double relative(const float* got, const float* want) {
  double err = 0, norm = 0;
  for (int i = 0; i < kHeadDim; ++i) {
    err += double(got[i] - want[i]) * (got[i] - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(err / norm);
}

// The largest relative error over kept rows after shifting positions [16, 32) down by 12,
// and (fresh) that of the same rows written directly at their new positions.
struct ShiftErrors {
  double shifted = 0, fresh = 0;
};

ShiftErrors shift_and_measure(KvDtype kt, const RopeTable& rope) {
  const ModelConfig c = shift_config();
  BlockManager m(kTokens / kBlock, kBlock, false);
  std::vector<int32_t> tokens(kTokens, 1);
  m.allocate(0, tokens, kTokens);
  PagedKvCache cache(c, m, {kt, KvDtype::F16});
  const Rows rows = random_rows();
  for (int l = 0; l < kLayers; ++l)
    for (int p = 0; p < kTokens; ++p)
      cache.write(l, 0, p, rotated(rope, rows.at(rows.k, l, p), p).data(), rows.at(rows.v, l, p));
  std::vector<std::vector<float>> v_before;
  for (int p = 16; p < kTokens; ++p)
    v_before.push_back(stored(cache, KvDtype::F16, 1, p, 1, false));
  constexpr int kDelta = -12;
  for (int l = 0; l < kLayers; ++l)
    for (int b = 16 / kBlock; b < kTokens / kBlock; ++b)
      cache.rerotate_k(l, m.block_table(0)[size_t(b)], 0, kBlock, rope, kDelta);
  ShiftErrors e;
  std::vector<float> fresh(kHeadDim);
  for (int l = 0; l < kLayers; ++l)
    for (int p = 16; p < kTokens; ++p) {
      const std::vector<float> want = rotated(rope, rows.at(rows.k, l, p), p + kDelta);
      for (int h = 0; h < kKvHeads; ++h) {
        const float* w = want.data() + h * kHeadDim;
        e.shifted = std::max(e.shifted, relative(stored(cache, kt, l, p, h, true).data(), w));
        std::vector<uint8_t> rec(kv_head_bytes(kt, kHeadDim));
        kv_encode_head(kt, w, rec.data(), kHeadDim);
        kv_decode_head(kt, rec.data(), fresh.data(), kHeadDim);
        e.fresh = std::max(e.fresh, relative(fresh.data(), w));
      }
    }
  for (int p = 16; p < kTokens; ++p)  // V rows: the same bits
    EXPECT_EQ(stored(cache, KvDtype::F16, 1, p, 1, false), v_before[size_t(p - 16)]);
  return e;
}

RopeTable plain_rope() { return RopeTable(kHeadDim, RopeConfig{}, /*neox=*/false); }

// YaRN: attn_factor and m scale every rotated row, the shift must not scale it again.
RopeTable yarn_rope() {
  RopeConfig rc;
  rc.freq_scale = 0.25f;
  rc.ext_factor = 1.0f;
  rc.n_ctx_orig = 16;
  return RopeTable(kHeadDim, rc, /*neox=*/true);
}

TEST(KvShift, F32KRowsEqualRowsRotatedAtTheirNewPosition) {
  for (const RopeTable& rope : {plain_rope(), yarn_rope()}) {
    const ShiftErrors e = shift_and_measure(KvDtype::F32, rope);
    EXPECT_LT(e.shifted, 1e-6);
  }
}

TEST(KvShift, StoredFormatsAddAtMostAboutOneRounding) {
  struct Bound {
    KvDtype t;
    double factor, step;  // shifted <= factor * fresh + step
  };
  for (const Bound& b : {Bound{KvDtype::F16, 2.0, 0x1p-11}, Bound{KvDtype::BF16, 2.0, 0x1p-8},
                         Bound{KvDtype::Int8, 2.5, 0.0}, Bound{KvDtype::Q4, 2.5, 0.0}}) {
    const ShiftErrors e = shift_and_measure(b.t, plain_rope());
    EXPECT_LE(e.shifted, b.factor * e.fresh + b.step)
        << kv_dtype_name(b.t) << ": shifted " << e.shifted << ", fresh " << e.fresh;
    std::printf("[ figures  ] K %s: shifted row error %.3g, fresh write %.3g (ratio %.2f)\n",
                kv_dtype_name(b.t), e.shifted, e.fresh, e.shifted / e.fresh);
  }
}

TEST(KvShift, RefusesASharedBlock) {
  BlockManager m(4, kBlock, false);
  std::vector<int32_t> tokens(kBlock, 1);
  m.allocate(0, tokens, kBlock);
  m.fork(0, 1);
  PagedKvCache cache(shift_config(), m, {});
  EXPECT_THROW(cache.rerotate_k(0, m.block_table(0)[0], 0, kBlock, plain_rope(), -4),
               std::logic_error);
  EXPECT_THROW(cache.rerotate_k(0, m.block_table(0)[0], 4, kBlock, plain_rope(), -4),
               std::out_of_range);
}

}  // namespace
}  // namespace kvforge
