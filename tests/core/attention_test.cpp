#include "core/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/formats/f16.h"

namespace kvforge {
namespace {

// A contiguous single-sequence cache: [n_pos][n_kv_head][head_dim] f32.
struct Cache {
  int n_pos, n_kv_head, head_dim;
  std::vector<float> k, v;
  Cache(int n, int heads, int dim, uint32_t seed)
      : n_pos(n),
        n_kv_head(heads),
        head_dim(dim),
        k(size_t(n) * heads * dim),
        v(size_t(n) * heads * dim) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (auto& x : k) x = g(rng);
    for (auto& x : v) x = g(rng);
  }
  size_t pos_stride() const { return size_t(n_kv_head) * head_dim * sizeof(float); }
  // Spans of the given lengths covering [0, n_pos), in order.
  std::vector<KvSpan> split(const std::vector<int>& lengths) const {
    std::vector<KvSpan> out;
    int pos = 0;
    for (int len : lengths) {
      KvSpan s;
      s.k = reinterpret_cast<const uint8_t*>(k.data() + size_t(pos) * n_kv_head * head_dim);
      s.v = reinterpret_cast<const uint8_t*>(v.data() + size_t(pos) * n_kv_head * head_dim);
      s.k_pos_stride = s.v_pos_stride = pos_stride();
      s.k_head_stride = s.v_head_stride = size_t(head_dim) * sizeof(float);
      s.n = len;
      out.push_back(s);
      pos += len;
    }
    return out;
  }
};

// Two-pass softmax in double over the positions `keep` admits.
std::vector<float> reference(const Cache& c, const std::vector<float>& q, int kv_head, int n_keys,
                             const std::vector<uint8_t>* keep) {
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  std::vector<double> scores(size_t(n_keys), -INFINITY);
  double max = -INFINITY;
  for (int p = 0; p < n_keys; ++p) {
    if (keep && !(*keep)[size_t(p)]) continue;
    double s = 0;
    const float* kr = c.k.data() + (size_t(p) * c.n_kv_head + kv_head) * c.head_dim;
    for (int d = 0; d < c.head_dim; ++d) s += double(q[size_t(d)]) * kr[d];
    scores[size_t(p)] = s * scale;
    max = std::max(max, scores[size_t(p)]);
  }
  std::vector<double> acc(size_t(c.head_dim), 0.0);
  double sum = 0;
  for (int p = 0; p < n_keys; ++p) {
    if (keep && !(*keep)[size_t(p)]) continue;
    const double w = std::exp(scores[size_t(p)] - max);
    sum += w;
    const float* vr = c.v.data() + (size_t(p) * c.n_kv_head + kv_head) * c.head_dim;
    for (int d = 0; d < c.head_dim; ++d) acc[size_t(d)] += w * vr[d];
  }
  std::vector<float> out(static_cast<size_t>(c.head_dim));
  for (int d = 0; d < c.head_dim; ++d) out[size_t(d)] = float(acc[size_t(d)] / sum);
  return out;
}

std::vector<float> run(const Cache& c, const std::vector<KvSpan>& spans,
                       const std::vector<float>& q, int kv_head, int n_keys,
                       const uint8_t* mask = nullptr, KvFormat format = {}) {
  std::vector<float> out(static_cast<size_t>(c.head_dim));
  std::vector<float> scratch(attention_scratch_floats(c.head_dim));
  attend_one_head(q.data(), spans.data(), spans.size(), n_keys, kv_head, c.head_dim, format,
                  1.0f / std::sqrt(float(c.head_dim)), out.data(), scratch.data(), mask);
  return out;
}

std::vector<float> random_q(int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 2.0f);
  std::vector<float> q(static_cast<size_t>(dim));
  for (auto& x : q) x = g(rng);
  return q;
}

// Close to a double-precision two-pass softmax; 1e-5 absolute on outputs of
// magnitude ~1 leaves room for float accumulation over a few hundred keys.
TEST(Attention, MatchesTwoPassSoftmax) {
  for (int n : {1, 7, 63, 64, 65, 200, 333}) {
    Cache c(n, 2, 48, uint32_t(n));
    const auto q = random_q(48, 99);
    for (int h = 0; h < 2; ++h) {
      const auto got = run(c, c.split({n}), q, h, n);
      const auto want = reference(c, q, h, n, nullptr);
      for (int d = 0; d < 48; ++d) EXPECT_NEAR(got[size_t(d)], want[size_t(d)], 1e-5) << n;
    }
  }
}

// Block-table splits of any size give the same bits as one span: tiles are
// cut at absolute positions, so paged and contiguous caches agree exactly.
TEST(Attention, SpanSplitDoesNotChangeBits) {
  const int n = 300;
  Cache c(n, 2, 32, 5);
  const auto q = random_q(32, 6);
  const auto whole = run(c, c.split({n}), q, 1, n);
  for (int block : {1, 3, 16, 64, 100, 256}) {
    std::vector<int> lengths;
    for (int p = 0; p < n; p += block) lengths.push_back(std::min(block, n - p));
    const auto got = run(c, c.split(lengths), q, 1, n);
    EXPECT_EQ(0, std::memcmp(got.data(), whole.data(), whole.size() * sizeof(float)))
        << "block " << block;
  }
  // Fewer keys than the spans hold: only the first n_keys are read.
  const auto prefix = run(c, c.split({n}), q, 1, 130);
  const auto split = run(c, c.split({16, 16, 16, 16, 16, 16, 16, 16, 16, 156}), q, 1, 130);
  EXPECT_EQ(0, std::memcmp(prefix.data(), split.data(), prefix.size() * sizeof(float)));
}

// A static cache: the whole buffer is passed, the mask marks [0, valid).
// Unused slots hold NaN and must not matter; the bits equal n_keys = valid.
TEST(Attention, PrefixMaskEqualsShorterKeysEvenWithNaNBeyond) {
  const int capacity = 256;
  for (int valid : {1, 63, 64, 65, 129, 255, 256}) {
    Cache c(capacity, 1, 32, uint32_t(valid));
    const auto q = random_q(32, 7);
    const auto want = run(c, c.split({capacity}), q, 0, valid);
    for (size_t i = size_t(valid) * 32; i < c.k.size(); ++i)
      c.k[i] = c.v[i] = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint8_t> mask(capacity, 0);
    std::fill(mask.begin(), mask.begin() + valid, 1);
    const auto got = run(c, c.split({capacity}), q, 0, capacity, mask.data());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
        << "valid " << valid;
  }
}

TEST(Attention, ArbitraryMaskMatchesReference) {
  const int n = 190;
  Cache c(n, 3, 16, 11);
  std::mt19937 rng(12);
  std::vector<uint8_t> mask(n);
  for (auto& m : mask) m = uint8_t(rng() % 3 == 0);
  mask[100] = 1;
  for (int i = 64; i < 128; ++i) mask[size_t(i)] = 0;  // a fully excluded tile
  mask[130] = 1;
  const auto q = random_q(16, 13);
  const auto got = run(c, c.split({10, 90, 90}), q, 2, n, mask.data());
  const auto want = reference(c, q, 2, n, &mask);
  for (int d = 0; d < 16; ++d) EXPECT_NEAR(got[size_t(d)], want[size_t(d)], 1e-5);
}

TEST(Attention, F16CacheMatchesReferenceOnRoundedValues) {
  const int n = 150, dim = 64;
  Cache c(n, 1, dim, 21);
  for (auto* buf : {&c.k, &c.v})
    for (auto& x : *buf) x = fp16_to_fp32(fp32_to_fp16(x));
  std::vector<uint16_t> k16(c.k.size()), v16(c.v.size());
  for (size_t i = 0; i < c.k.size(); ++i) {
    k16[i] = fp32_to_fp16(c.k[i]);
    v16[i] = fp32_to_fp16(c.v[i]);
  }
  KvSpan s;
  s.k = reinterpret_cast<const uint8_t*>(k16.data());
  s.v = reinterpret_cast<const uint8_t*>(v16.data());
  s.k_pos_stride = s.v_pos_stride = size_t(dim) * 2;
  s.k_head_stride = s.v_head_stride = size_t(dim) * 2;
  s.n = n;
  const auto q = random_q(dim, 22);
  const auto got = run(c, {s}, q, 0, n, nullptr, {KvDtype::F16, KvDtype::F16});
  const auto want = reference(c, q, 0, n, nullptr);
  for (int d = 0; d < dim; ++d) EXPECT_NEAR(got[size_t(d)], want[size_t(d)], 1e-5);
}

}  // namespace
}  // namespace kvforge
