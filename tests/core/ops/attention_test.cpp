#include "core/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/attention_tile.h"
#include "formats_test_util.h"
#include "simd_levels.h"

namespace kvforge {
namespace {

// A contiguous single-sequence cache of head records in `format`:
// [n_pos][n_kv_head] records. k/v hold the values the records decode to, the
// input of the double-precision reference.
struct Cache {
  int n_pos, n_kv_head, head_dim;
  KvFormat format;
  size_t k_bytes, v_bytes;  // one record
  std::vector<uint8_t> k_rec, v_rec;
  std::vector<float> k, v;  // [n_pos][n_kv_head][head_dim] decoded
  Cache(int n, int heads, int dim, uint32_t seed, KvFormat fmt = {})
      : n_pos(n),
        n_kv_head(heads),
        head_dim(dim),
        format(fmt),
        k_bytes(kv_head_bytes(fmt.k, dim)),
        v_bytes(kv_head_bytes(fmt.v, dim)),
        k_rec(size_t(n) * heads * k_bytes),
        v_rec(size_t(n) * heads * v_bytes),
        k(size_t(n) * heads * dim),
        v(size_t(n) * heads * dim) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(dim));
    for (size_t r = 0; r < size_t(n) * heads; ++r) {
      for (auto& e : x) e = g(rng);
      kv_encode_head(fmt.k, x.data(), k_rec.data() + r * k_bytes, dim);
      kv_decode_head(fmt.k, k_rec.data() + r * k_bytes, k.data() + r * dim, dim);
      for (auto& e : x) e = g(rng) + 0.3f;  // off-centre V
      kv_encode_head(fmt.v, x.data(), v_rec.data() + r * v_bytes, dim);
      kv_decode_head(fmt.v, v_rec.data() + r * v_bytes, v.data() + r * dim, dim);
    }
  }
  // Spans of the given lengths covering [first, first + sum), in order.
  std::vector<KvSpan> split(const std::vector<int>& lengths, int first = 0) const {
    std::vector<KvSpan> out;
    int pos = first;
    for (int len : lengths) {
      KvSpan s;
      s.k = k_rec.data() + size_t(pos) * n_kv_head * k_bytes;
      s.v = v_rec.data() + size_t(pos) * n_kv_head * v_bytes;
      s.k_pos_stride = size_t(n_kv_head) * k_bytes;
      s.v_pos_stride = size_t(n_kv_head) * v_bytes;
      s.k_head_stride = k_bytes;
      s.v_head_stride = v_bytes;
      s.n = len;
      out.push_back(s);
      pos += len;
    }
    return out;
  }
  // All-ones bytes in every record from `pos` on: NaN in every format (f32/f16/
  // bf16 values, the f16 scales of int8 and q4).
  void poison_from(int pos) {
    std::fill(k_rec.begin() + ptrdiff_t(size_t(pos) * n_kv_head * k_bytes), k_rec.end(), 0xff);
    std::fill(v_rec.begin() + ptrdiff_t(size_t(pos) * n_kv_head * v_bytes), v_rec.end(), 0xff);
  }
};

// Two-pass softmax in double over the positions `keep` admits.
std::vector<float> reference(const Cache& c, const float* q, int kv_head, int n_keys,
                             const std::vector<uint8_t>* keep) {
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  std::vector<double> scores(size_t(n_keys), -INFINITY);
  double max = -INFINITY;
  for (int p = 0; p < n_keys; ++p) {
    if (keep && !(*keep)[size_t(p)]) continue;
    double s = 0;
    const float* kr = c.k.data() + (size_t(p) * c.n_kv_head + kv_head) * c.head_dim;
    for (int d = 0; d < c.head_dim; ++d) s += double(q[d]) * kr[d];
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

// n_q query heads (q: [n_q][head_dim]) of kv head `kv_head`.
std::vector<float> run(const Cache& c, const std::vector<KvSpan>& spans,
                       const std::vector<float>& q, int kv_head, int n_keys,
                       const uint8_t* mask = nullptr) {
  const int n_q = int(q.size()) / c.head_dim;
  std::vector<float> out(q.size());
  std::vector<float> scratch(attention_scratch_floats(c.head_dim));
  attend_heads(q.data(), n_q, spans.data(), spans.size(), n_keys, kv_head, c.head_dim, c.format,
               1.0f / std::sqrt(float(c.head_dim)), out.data(), scratch.data(), mask);
  return out;
}

std::vector<float> random_q(int n, uint32_t seed) {
  return testing::gaussian(size_t(n), seed, 2.0f);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every SIMD level this machine has; the level is restored afterwards.
struct EachLevel {
  testing::SimdLevelGuard guard;
  std::vector<SimdLevel> levels = testing::available_simd_levels();
};

std::string name(KvFormat f) {
  return std::string("K ") + kv_dtype_name(f.k) + " V " + kv_dtype_name(f.v);
}

const std::vector<KvFormat>& formats() {
  static const std::vector<KvFormat> all = {
      {KvDtype::F32, KvDtype::F32},   {KvDtype::F16, KvDtype::F16}, {KvDtype::BF16, KvDtype::BF16},
      {KvDtype::Int8, KvDtype::Int8}, {KvDtype::Q4, KvDtype::Q4},   {KvDtype::Int8, KvDtype::F16},
      {KvDtype::F32, KvDtype::Q4},    {KvDtype::Q4, KvDtype::Int8},
  };
  return all;
}

bool has_q4(KvFormat f) { return f.k == KvDtype::Q4 || f.v == KvDtype::Q4; }

// Close to a double-precision two-pass softmax; 1e-5 absolute on outputs of
// magnitude ~1 leaves room for float accumulation over a few hundred keys
// (and, on the SIMD paths, for the polynomial exp's ~2e-7 relative error).
TEST(Attention, MatchesTwoPassSoftmax) {
  EachLevel each;
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (int n : {1, 7, 63, 64, 65, 200, 333}) {
      Cache c(n, 2, 48, uint32_t(n));
      const auto q = random_q(48, 99);
      for (int h = 0; h < 2; ++h) {
        const auto got = run(c, c.split({n}), q, h, n);
        const auto want = reference(c, q.data(), h, n, nullptr);
        for (int d = 0; d < 48; ++d)
          EXPECT_NEAR(got[size_t(d)], want[size_t(d)], 1e-5) << n << " " << simd_level_name(level);
      }
    }
  }
}

// Quantized records are decoded inside the kernel: the result equals exact
// attention over the decoded values up to float rounding (2e-5 absolute),
// for every format, K/V mix, head size (tails not a multiple of 16 too) and
// SIMD level, with a GQA group of 3 query heads.
TEST(Attention, EveryFormatMatchesReferenceOnDecodedValues) {
  EachLevel each;
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : formats()) {
      for (int dim : {32, 64, 128, 48, 80}) {
        if (has_q4(f) && dim % 32) continue;
        for (int n : {1, 65, 200}) {
          Cache c(n, 2, dim, uint32_t(n + dim), f);
          const auto q = random_q(3 * dim, 5);
          const auto got = run(c, c.split({n}), q, 1, n);
          for (int j = 0; j < 3; ++j) {
            const auto want = reference(c, q.data() + j * dim, 1, n, nullptr);
            for (int d = 0; d < dim; ++d)
              ASSERT_NEAR(got[size_t(j * dim + d)], want[size_t(d)], 2e-5)
                  << name(f) << " dim " << dim << " n " << n << " " << simd_level_name(level);
          }
        }
      }
    }
  }
}

// The SIMD paths against the scalar reference path directly: same decoded
// values, different summation order and exp, so 1e-5 absolute.
TEST(Attention, SimdMatchesScalarForEveryFormat) {
  EachLevel each;
  for (KvFormat f : formats()) {
    Cache c(300, 2, 64, 41, f);
    const auto q = random_q(4 * 64, 42);
    set_simd_level(SimdLevel::Scalar);
    const auto want = run(c, c.split({300}), q, 0, 300);
    for (SimdLevel level : each.levels) {
      set_simd_level(level);
      const auto got = run(c, c.split({300}), q, 0, 300);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5) << name(f) << " " << simd_level_name(level);
    }
  }
}

// Block-table splits of any size give the same bits as one span: tiles are
// cut at absolute positions, so paged and contiguous caches agree exactly —
// on every path and format.
TEST(Attention, SpanSplitDoesNotChangeBits) {
  EachLevel each;
  const int n = 300;
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : formats()) {
      Cache c(n, 2, 32, 5, f);
      const auto q = random_q(2 * 32, 6);
      const auto whole = run(c, c.split({n}), q, 1, n);
      for (int block : {1, 3, 16, 64, 100, 256}) {
        std::vector<int> lengths;
        for (int p = 0; p < n; p += block) lengths.push_back(std::min(block, n - p));
        EXPECT_TRUE(same_bits(run(c, c.split(lengths), q, 1, n), whole))
            << "block " << block << " " << name(f) << " " << simd_level_name(level);
      }
      // Fewer keys than the spans hold: only the first n_keys are read.
      const auto prefix = run(c, c.split({n}), q, 1, 130);
      const auto split = run(c, c.split({16, 16, 16, 16, 16, 16, 16, 16, 16, 156}), q, 1, 130);
      EXPECT_TRUE(same_bits(prefix, split)) << name(f) << " " << simd_level_name(level);
    }
  }
}

// Prefill runs: several query tokens through one walk of the K/V tiles give
// each token the same bits as attending alone, for key counts that end inside
// and on tile edges, runs that straddle tiles, paged splits, every format and
// level, and more stacked heads than the scratch holds (one query at a time).
TEST(Attention, QueryRunsEqualEachQueryAloneBitForBit) {
  EachLevel each;
  const int dim = 32, n = 200;
  const std::vector<std::vector<int32_t>> runs = {{1},
                                                  {1, 2, 3, 4, 5, 6, 7, 8},
                                                  {60, 63, 64, 65, 66},
                                                  {64, 128, 129, 192},
                                                  {5, 70, 140, 200},
                                                  {130, 130, 131}};
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : formats()) {
      Cache c(n, 2, dim, 9, f);
      for (int n_q : {1, 3, 8}) {
        for (const auto& keys : runs) {
          const int nq = int(keys.size());
          const auto q = random_q(nq * n_q * dim, uint32_t(nq + n_q));
          for (const auto& spans : {c.split({n}), c.split({16, 48, 1, 63, 72})}) {
            std::vector<float> got(q.size());
            std::vector<float> scratch(attention_queries_scratch_floats(dim));
            const size_t stride = size_t(n_q) * dim;
            std::vector<KeyRange> ranges;
            for (int32_t k : keys) ranges.push_back({0, k});
            attend_queries(
                q.data(), stride, n_q, ranges.data(), nq, KvView{spans.data(), spans.size(), 0}, 1,
                dim, f, Scoring{1.0f / std::sqrt(float(dim))}, got.data(), stride, scratch.data());
            for (int i = 0; i < nq; ++i) {
              const std::vector<float> qi(q.begin() + ptrdiff_t(i * stride),
                                          q.begin() + ptrdiff_t((i + 1) * stride));
              const std::vector<float> gi(got.begin() + ptrdiff_t(i * stride),
                                          got.begin() + ptrdiff_t((i + 1) * stride));
              ASSERT_TRUE(same_bits(gi, run(c, spans, qi, 1, keys[size_t(i)])))
                  << "query " << i << " of " << nq << ", keys " << keys[size_t(i)] << ", n_q "
                  << n_q << ", " << name(f) << " " << simd_level_name(level);
            }
          }
        }
      }
    }
  }
}

// Sliding windows: queries over ranges [begin, end) read from a view that
// starts at some position ≤ every begin (the records before it dropped, as a
// windowed cache drops them) give the bits of attend_heads over the whole
// cache with a mask keeping [begin, end): tiles stay cut at multiples of
// kAttentionTile from position 0. Runs of one query and of several, ranges
// inside one tile and across tiles, at every level and format.
TEST(Attention, WindowedRangesEqualMaskedFullCacheBitForBit) {
  EachLevel each;
  const int dim = 32, n = 260;
  // (first position the view holds, query ranges)
  const std::vector<std::pair<int, std::vector<KeyRange>>> cases = {
      {0, {{0, 10}}},
      {70, {{70, 140}}},
      {100, {{130, 200}}},
      {60, {{61, 129}, {62, 130}, {63, 131}, {64, 132}}},
      {3, {{3, 67}, {4, 68}, {70, 134}}},
      {128, {{128, 256}, {129, 257}, {130, 258}, {131, 259}, {132, 260}}}};
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : formats()) {
      Cache c(n, 2, dim, 11, f);
      for (int n_q : {1, 4}) {
        for (const auto& [first, ranges] : cases) {
          const int nq = int(ranges.size());
          const auto q = random_q(nq * n_q * dim, uint32_t(first + nq));
          const auto spans = c.split({5, n - first - 5}, first);
          std::vector<float> got(q.size());
          std::vector<float> scratch(attention_queries_scratch_floats(dim));
          const size_t stride = size_t(n_q) * dim;
          attend_queries(q.data(), stride, n_q, ranges.data(), nq,
                         KvView{spans.data(), spans.size(), first}, 1, dim, f,
                         Scoring{1.0f / std::sqrt(float(dim))}, got.data(), stride, scratch.data());
          for (int i = 0; i < nq; ++i) {
            std::vector<uint8_t> mask(size_t(n), 0);
            std::fill(mask.begin() + ranges[size_t(i)].begin, mask.begin() + ranges[size_t(i)].end,
                      1);
            const std::vector<float> qi(q.begin() + ptrdiff_t(i * stride),
                                        q.begin() + ptrdiff_t((i + 1) * stride));
            const std::vector<float> gi(got.begin() + ptrdiff_t(i * stride),
                                        got.begin() + ptrdiff_t((i + 1) * stride));
            ASSERT_TRUE(
                same_bits(gi, run(c, c.split({n}), qi, 1, ranges[size_t(i)].end, mask.data())))
                << "query " << i << " of " << nq << ", view from " << first << ", n_q " << n_q
                << ", " << name(f) << " " << simd_level_name(level);
          }
        }
      }
    }
  }
}

// Soft-capped scores (gemma2): s → cap·tanh(s/cap) before the softmax, against
// a double-precision reference, at every level.
TEST(Attention, SoftCapMatchesReference) {
  EachLevel each;
  const int dim = 64, n = 150;
  const float cap = 2.0f;  // small, so the cap bends most scores
  Cache c(n, 1, dim, 5);
  const auto q = random_q(dim, 9);
  const float scale = 1.0f / std::sqrt(float(dim));
  std::vector<double> s(static_cast<size_t>(n));
  double max = -INFINITY;
  for (int p = 0; p < n; ++p) {
    double dot = 0;
    for (int d = 0; d < dim; ++d) dot += double(q[size_t(d)]) * c.k[size_t(p * dim + d)];
    s[size_t(p)] = cap * std::tanh(dot * scale / cap);
    max = std::max(max, s[size_t(p)]);
  }
  std::vector<double> want(size_t(dim), 0.0);
  double sum = 0;
  for (int p = 0; p < n; ++p) {
    const double w = std::exp(s[size_t(p)] - max);
    sum += w;
    for (int d = 0; d < dim; ++d) want[size_t(d)] += w * c.v[size_t(p * dim + d)];
  }
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    const auto spans = c.split({n});
    const KeyRange keys{0, n};
    std::vector<float> got(static_cast<size_t>(dim)),
        scratch(attention_queries_scratch_floats(dim));
    attend_queries(q.data(), size_t(dim), 1, &keys, 1, KvView{spans.data(), spans.size(), 0}, 0,
                   dim, c.format, Scoring{scale, cap}, got.data(), size_t(dim), scratch.data());
    for (int d = 0; d < dim; ++d)
      EXPECT_NEAR(got[size_t(d)], want[size_t(d)] / sum, 2e-5) << simd_level_name(level);
  }
}

// A static cache: the whole buffer is passed, the mask marks [0, valid).
// Unused slots hold NaN (in values and in scales) and must not matter; the
// bits equal n_keys = valid.
TEST(Attention, PrefixMaskEqualsShorterKeysEvenWithNaNBeyond) {
  EachLevel each;
  const int capacity = 256;
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : formats()) {
      for (int valid : {1, 63, 64, 65, 129, 255, 256}) {
        Cache c(capacity, 1, 32, uint32_t(valid), f);
        const auto q = random_q(32, 7);
        const auto want = run(c, c.split({capacity}), q, 0, valid);
        c.poison_from(valid);
        std::vector<uint8_t> mask(capacity, 0);
        std::fill(mask.begin(), mask.begin() + valid, 1);
        const auto got = run(c, c.split({capacity}), q, 0, capacity, mask.data());
        EXPECT_TRUE(same_bits(got, want))
            << "valid " << valid << " " << name(f) << " " << simd_level_name(level);
      }
    }
  }
}

TEST(Attention, ArbitraryMaskMatchesReference) {
  EachLevel each;
  const int n = 190;
  std::mt19937 rng(12);
  std::vector<uint8_t> mask(n);
  for (auto& m : mask) m = uint8_t(rng() % 3 == 0);
  mask[100] = 1;
  for (int i = 64; i < 128; ++i) mask[size_t(i)] = 0;  // a fully excluded tile
  mask[130] = 1;
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : {KvFormat{}, KvFormat{KvDtype::Int8, KvDtype::Q4}}) {
      Cache c(n, 3, 32, 11, f);
      const auto q = random_q(32, 13);
      const auto got = run(c, c.split({10, 90, 90}), q, 2, n, mask.data());
      const auto want = reference(c, q.data(), 2, n, &mask);
      for (int d = 0; d < 32; ++d)
        EXPECT_NEAR(got[size_t(d)], want[size_t(d)], 1e-5) << name(f) << simd_level_name(level);
    }
  }
}

// Reading a record once for the whole GQA group does not change any head's
// bits, including groups larger than one pass (kAttentionHeadsPerPass).
TEST(Attention, GroupGivesTheSameBitsAsSingleHeads) {
  EachLevel each;
  const int dim = 64, n = 150, n_q = kAttentionHeadsPerPass + 4;
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f : formats()) {
      Cache c(n, 2, dim, 31, f);
      const auto q = random_q(n_q * dim, 32);
      const auto group = run(c, c.split({n}), q, 1, n);
      for (int j = 0; j < n_q; ++j) {
        const std::vector<float> one_q(q.begin() + j * dim, q.begin() + (j + 1) * dim);
        const std::vector<float> one_out(group.begin() + j * dim, group.begin() + (j + 1) * dim);
        EXPECT_TRUE(same_bits(run(c, c.split({n}), one_q, 1, n), one_out))
            << "head " << j << " " << name(f) << " " << simd_level_name(level);
      }
    }
  }
}

// ---- The tile step itself, per SIMD level, against the scalar tile step ----

using attention_detail::TileJob;
using TileFn = void (*)(const TileJob&);

// The tile functions of the levels this machine has, with their names.
std::vector<std::pair<TileFn, std::string>> simd_tile_functions() {
  EachLevel each;
  std::vector<std::pair<TileFn, std::string>> out;
  for (SimdLevel l : each.levels) {
    if (l == SimdLevel::Avx2) out.emplace_back(attention_detail::attend_tile_avx2, "avx2");
    if (l == SimdLevel::Avx512) out.emplace_back(attention_detail::attend_tile_avx512, "avx512");
  }
  return out;
}

// The online-softmax state of n_q heads before and after one tile, with the
// scratch a tile step needs. A later tile's state: running max anywhere from
// below to above the tile's scores, positive sum, acc ~ sum·N(0, 1).
struct TileState {
  int n_q, head_dim;
  std::vector<float> acc, running_max, running_sum, scores, row;
  TileState(int heads, int dim, bool first_tile, std::mt19937& rng)
      : n_q(heads),
        head_dim(dim),
        acc(size_t(heads) * dim),
        running_max(size_t(heads)),
        running_sum(size_t(heads)),
        scores(size_t(heads) * kAttentionTile, NAN),  // the step must not read stale scores
        row(size_t(dim), NAN) {
    std::uniform_real_distribution<float> max_dist(-4.0f, 8.0f), sum_dist(0.5f, 20.0f);
    std::normal_distribution<float> g;
    for (int j = 0; j < heads; ++j) {
      running_max[size_t(j)] = first_tile ? -INFINITY : max_dist(rng);
      running_sum[size_t(j)] = first_tile ? 0.0f : sum_dist(rng);
      for (int d = 0; d < dim; ++d)
        acc[size_t(j) * dim + d] = first_tile ? 0.0f : g(rng) * running_sum[size_t(j)];
    }
  }
  TileJob job(const std::vector<float>& q, KvFormat format, const uint8_t* const* k_rows,
              const uint8_t* const* v_rows, int n) {
    TileJob j;
    j.q = q.data();
    j.n_q = n_q;
    j.head_dim = head_dim;
    j.format = format;
    j.scale = 1.0f / std::sqrt(float(head_dim));
    j.k_rows = k_rows;
    j.v_rows = v_rows;
    j.n = n;
    j.acc = acc.data();
    j.running_max = running_max.data();
    j.running_sum = running_sum.data();
    j.scores = scores.data();
    j.row = row.data();
    return j;
  }
  // Head j's state alone: its slice of acc, max and sum.
  TileState head(int j) const {
    TileState one = *this;
    one.n_q = 1;
    one.acc.assign(acc.begin() + ptrdiff_t(size_t(j) * head_dim),
                   acc.begin() + ptrdiff_t(size_t(j + 1) * head_dim));
    one.running_max = {running_max[size_t(j)]};
    one.running_sum = {running_sum[size_t(j)]};
    one.scores.assign(kAttentionTile, NAN);
    return one;
  }
};

// Record pointers of positions [0, n) of kv head 1 of a cache, in reverse
// order with gaps (a tile's positions are any records, gathered past masked
// slots and block edges).
std::pair<std::vector<const uint8_t*>, std::vector<const uint8_t*>> tile_rows(const Cache& c,
                                                                              int n) {
  std::vector<const uint8_t*> k, v;
  for (int t = 0; t < n; ++t) {
    const size_t r = size_t(c.n_pos - 1 - 2 * t) * c.n_kv_head + 1;
    k.push_back(c.k_rec.data() + r * c.k_bytes);
    v.push_back(c.v_rec.data() + r * c.v_bytes);
  }
  return {k, v};
}

// Every format × head size (with tails past a multiple of 8 and 16 where the
// format allows) × heads per job 1..8 × tile fill 1..64, on a first and a
// later tile: each SIMD tile step leaves the scalar step's state up to float
// rounding. The output a state stands for, acc / sum, is compared at 2e-5
// absolute (values ~1), the running max at 1e-5 relative and the sum at 2e-5
// relative.
TEST(AttentionTile, SimdStepMatchesScalarStepForEveryShape) {
  const auto simd = simd_tile_functions();
  if (simd.empty()) GTEST_SKIP() << "no SIMD level on this machine";
  std::mt19937 rng(2024);
  for (KvFormat f : formats()) {
    for (int dim : {8, 20, 32, 48, 64, 80, 128}) {
      if (!kv_supports_head_dim(f.k, dim) || !kv_supports_head_dim(f.v, dim)) continue;
      const Cache c(2 * kAttentionTile, 2, dim, uint32_t(dim), f);
      const auto [k_rows, v_rows] = tile_rows(c, kAttentionTile);
      for (int n_q = 1; n_q <= kAttentionHeadsPerPass; ++n_q) {
        const auto q = random_q(n_q * dim, uint32_t(n_q * 131 + dim));
        for (int n = 1; n <= kAttentionTile; ++n) {
          const bool first = (n + n_q) % 3 == 0;
          const TileState before(n_q, dim, first, rng);
          TileState want = before;
          attention_detail::attend_tile_scalar(want.job(q, f, k_rows.data(), v_rows.data(), n));
          for (const auto& [tile, level] : simd) {
            TileState got = before;
            tile(got.job(q, f, k_rows.data(), v_rows.data(), n));
            for (int j = 0; j < n_q; ++j) {
              const size_t sj = size_t(j);
              SCOPED_TRACE(name(f) + " dim " + std::to_string(dim) + " n_q " + std::to_string(n_q) +
                           " n " + std::to_string(n) + " head " + std::to_string(j) +
                           (first ? " first tile " : " later tile ") + level);
              ASSERT_NEAR(got.running_max[sj], want.running_max[sj],
                          1e-5 * std::max(1.0f, std::fabs(want.running_max[sj])));
              ASSERT_NEAR(got.running_sum[sj], want.running_sum[sj], 2e-5 * want.running_sum[sj]);
              for (int d = 0; d < dim; ++d) {
                const size_t i = sj * dim + d;
                ASSERT_NEAR(got.acc[i] / got.running_sum[sj], want.acc[i] / want.running_sum[sj],
                            2e-5)
                    << "d " << d;
              }
            }
          }
        }
      }
    }
  }
}

// Within a tile step, a head's bits do not depend on the other heads of the
// job (how many, or how the SIMD code blocks them): every head of an 8-head
// job equals that head stepped alone, on every level, format and fill.
TEST(AttentionTile, EachHeadOfAJobEqualsThatHeadAlone) {
  std::vector<std::pair<TileFn, std::string>> levels = simd_tile_functions();
  levels.emplace_back(attention_detail::attend_tile_scalar, "scalar");
  std::mt19937 rng(77);
  const int n_q = kAttentionHeadsPerPass;
  for (KvFormat f : formats()) {
    for (int dim : {32, 48, 64, 80}) {
      if (!kv_supports_head_dim(f.k, dim) || !kv_supports_head_dim(f.v, dim)) continue;
      const Cache c(2 * kAttentionTile, 2, dim, uint32_t(dim + 1), f);
      const auto [k_rows, v_rows] = tile_rows(c, kAttentionTile);
      const auto q = random_q(n_q * dim, uint32_t(dim));
      for (int n : {1, 2, 15, 16, 17, 33, 63, 64}) {
        const TileState before(n_q, dim, n % 2 == 0, rng);
        for (const auto& [tile, level] : levels) {
          TileState group = before;
          tile(group.job(q, f, k_rows.data(), v_rows.data(), n));
          for (int j = 0; j < n_q; ++j) {
            TileState alone = before.head(j);
            const std::vector<float> qj(q.begin() + ptrdiff_t(j * dim),
                                        q.begin() + ptrdiff_t((j + 1) * dim));
            tile(alone.job(qj, f, k_rows.data(), v_rows.data(), n));
            const std::vector<float> group_acc(group.acc.begin() + ptrdiff_t(j * dim),
                                               group.acc.begin() + ptrdiff_t((j + 1) * dim));
            EXPECT_TRUE(same_bits(alone.acc, group_acc) &&
                        same_bits(alone.running_max, {group.running_max[size_t(j)]}) &&
                        same_bits(alone.running_sum, {group.running_sum[size_t(j)]}))
                << "head " << j << " " << name(f) << " dim " << dim << " n " << n << " " << level;
          }
        }
      }
    }
  }
}

// Heads wider than the SIMD paths buffer (they fall back to the scalar step)
// still match the two-pass reference on every level.
TEST(Attention, VeryWideHeadsMatchReference) {
  EachLevel each;
  const int dim = 544;  // a multiple of 32 (q4), beyond any LLaMA-family head
  for (SimdLevel level : each.levels) {
    set_simd_level(level);
    for (KvFormat f :
         {KvFormat{KvDtype::F16, KvDtype::F16}, KvFormat{KvDtype::Q4, KvDtype::Int8}}) {
      Cache c(70, 1, dim, 3, f);
      const auto q = random_q(2 * dim, 4);
      const auto got = run(c, c.split({70}), q, 0, 70);
      for (int j = 0; j < 2; ++j) {
        const auto want = reference(c, q.data() + j * dim, 0, 70, nullptr);
        for (int d = 0; d < dim; ++d)
          ASSERT_NEAR(got[size_t(j * dim + d)], want[size_t(d)], 2e-5)
              << name(f) << " " << simd_level_name(level);
      }
    }
  }
}

}  // namespace
}  // namespace kvforge
