// Attention sinks (gpt-oss): query head j's softmax has one more term,
// exp(sinks[j]), in its denominator and none in the numerator. Checked
// against a double-precision definition at every SIMD level, for a run of
// queries sharing the records (each query its own window of keys) and for
// more heads than one stacked pass holds; a sink of -inf changes no bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/attention.h"
#include "simd_levels.h"

namespace kvforge::attention_sinks_test {
namespace {

constexpr int kDim = 32, kPos = 150;

// One kv head's records of kPos positions, and the values they decode to.
struct Records {
  KvFormat format;
  std::vector<uint8_t> k_rec, v_rec;
  std::vector<float> k, v;  // [kPos][kDim]
  explicit Records(KvFormat f = {KvDtype::F32, KvDtype::F32})
      : format(f), k(size_t(kPos) * kDim), v(size_t(kPos) * kDim) {
    std::mt19937 rng(3);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (float& x : k) x = g(rng);
    for (float& x : v) x = g(rng) + 0.3f;
    const size_t kb = kv_head_bytes(format.k, kDim), vb = kv_head_bytes(format.v, kDim);
    k_rec.resize(kb * kPos);
    v_rec.resize(vb * kPos);
    for (int p = 0; p < kPos; ++p) {
      kv_encode_head(format.k, k.data() + p * kDim, k_rec.data() + p * kb, kDim);
      kv_encode_head(format.v, v.data() + p * kDim, v_rec.data() + p * vb, kDim);
      kv_decode_head(format.k, k_rec.data() + p * kb, k.data() + p * kDim, kDim);
      kv_decode_head(format.v, v_rec.data() + p * vb, v.data() + p * kDim, kDim);
    }
  }
  KvSpan span() const {
    const size_t kb = kv_head_bytes(format.k, kDim), vb = kv_head_bytes(format.v, kDim);
    return KvSpan{k_rec.data(), v_rec.data(), kb, kb, vb, vb, kPos};
  }
};

// One head over keys [begin, end) with its sink, in double.
std::vector<double> with_sink(const Records& r, const float* q, KeyRange keys, float scale,
                              double sink) {
  std::vector<double> s;
  double max = sink;
  for (int p = keys.begin; p < keys.end; ++p) {
    double dot = 0;
    for (int d = 0; d < kDim; ++d) dot += double(q[d]) * r.k[size_t(p * kDim + d)];
    s.push_back(dot * scale);
    max = std::max(max, s.back());
  }
  double sum = std::exp(sink - max);
  std::vector<double> acc(kDim, 0.0);
  for (int p = keys.begin; p < keys.end; ++p) {
    const double w = std::exp(s[size_t(p - keys.begin)] - max);
    sum += w;
    for (int d = 0; d < kDim; ++d) acc[size_t(d)] += w * r.v[size_t(p * kDim + d)];
  }
  for (double& a : acc) a /= sum;
  return acc;
}

// n_queries queries of n_q heads each over windows of 20 ending at their
// positions. 1e-5 on outputs of magnitude ~1, as attention_test.cpp's
// two-pass check allows (float sums, the SIMD paths' polynomial exp).
void check_against_definition(int n_q, int n_queries, KvFormat format) {
  const Records r(format);
  const KvSpan span = r.span();
  const KvView view{&span, 1, 0};
  std::vector<float> q(size_t(n_q * n_queries * kDim)), sinks(static_cast<size_t>(n_q));
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 2.0f);
  for (float& x : q) x = g(rng);
  for (int j = 0; j < n_q; ++j) sinks[size_t(j)] = -1.0f + 0.7f * float(j);
  std::vector<KeyRange> keys;
  for (int i = 0; i < n_queries; ++i) keys.push_back({100 + i - 19, 100 + i + 1});
  const float scale = 1.0f / std::sqrt(float(kDim));
  testing::SimdLevelGuard guard;
  for (SimdLevel level : testing::available_simd_levels()) {
    set_simd_level(level);
    std::vector<float> out(q.size()), scratch(attention_queries_scratch_floats(kDim));
    attend_queries(q.data(), size_t(n_q * kDim), n_q, keys.data(), n_queries, view, 0, kDim,
                   r.format, Scoring{scale, 0.0f, sinks.data()}, out.data(), size_t(n_q * kDim),
                   scratch.data());
    for (int i = 0; i < n_queries; ++i)
      for (int j = 0; j < n_q; ++j) {
        const size_t at = size_t((i * n_q + j) * kDim);
        const auto want = with_sink(r, q.data() + at, keys[size_t(i)], scale, sinks[size_t(j)]);
        for (int d = 0; d < kDim; ++d)
          ASSERT_NEAR(out[at + size_t(d)], want[size_t(d)], 1e-5)
              << simd_level_name(level) << " query " << i << " head " << j;
      }
  }
}

// In f32 and in the quantized KV formats (int8 K/V, q4 K with f16 V).
TEST(AttentionSinks, RunOfQueriesMatchesDefinition) {
  for (const KvFormat f :
       {KvFormat{KvDtype::F32, KvDtype::F32}, KvFormat{KvDtype::Int8, KvDtype::Int8},
        KvFormat{KvDtype::Q4, KvDtype::F16}})
    check_against_definition(4, 3, f);
}

// 8 heads × 6 queries exceed kAttentionMaxStackedHeads: one query at a time.
TEST(AttentionSinks, ManyHeadsMatchDefinition) {
  check_against_definition(8, 6, {KvDtype::F32, KvDtype::F32});
}

TEST(AttentionSinks, MinusInfinitySinkChangesNoBit) {
  const Records r;
  const KvSpan span = r.span();
  std::vector<float> q(2 * kDim, 0.5f), scratch(attention_queries_scratch_floats(kDim));
  q[3] = -2.0f;
  const float sinks[2] = {-INFINITY, -INFINITY};
  const KeyRange keys{0, kPos};
  std::vector<float> plain(q.size()), sunk(q.size());
  attend_queries(q.data(), q.size(), 2, &keys, 1, {&span, 1, 0}, 0, kDim, r.format,
                 Scoring{0.2f, 0.0f, nullptr}, plain.data(), q.size(), scratch.data());
  attend_queries(q.data(), q.size(), 2, &keys, 1, {&span, 1, 0}, 0, kDim, r.format,
                 Scoring{0.2f, 0.0f, sinks}, sunk.data(), q.size(), scratch.data());
  EXPECT_EQ(0, std::memcmp(plain.data(), sunk.data(), plain.size() * sizeof(float)));
}

}  // namespace
}  // namespace kvforge::attention_sinks_test
