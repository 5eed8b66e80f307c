// PagedKvCache: the layout seen through spans(), bounds and sharing checks,
// and whole forward passes. Several sequences share each step; their logits
// must be bit-identical to the same steps on a ContiguousKvCache (the
// attention kernel cuts its softmax tiles at absolute positions, so a block
// split changes no sum) and, with f32 K/V, within 1e-4 of the scalar
// reference (the tolerance forward_oracle_test.cpp justifies for f32
// weights); stored formats get the bounds given at the instantiation.
#include "engine/kv/paged_kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"
#include "reference_forward.h"
#include "test_models.h"

namespace kvforge {
namespace {

RandomModelSpec tiny_spec() {
  RandomModelSpec spec;  // 64 wide, 2 layers, 4 heads over 2 KV heads: head_dim 16
  spec.name = "paged";
  spec.seed = 5;
  return spec;
}

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_kv_head = 2;
  c.head_dim = 16;
  return c;
}

TEST(PagedKvCacheTest, BlockBytesSizesThePool) {
  const ModelConfig c = tiny_config();
  // f32: 2 (K,V) * 2 layers * 2 heads * 16 dims * 4 bytes = 512 bytes per position.
  EXPECT_EQ(PagedKvCache::block_bytes(c, 16, {}), 16 * c.kv_bytes_per_token(4));
  EXPECT_EQ(PagedKvCache::block_bytes(c, 16, {}), 8192u);
  EXPECT_EQ(PagedKvCache::block_bytes(c, 1, {KvDtype::F16, KvDtype::F16}), c.kv_bytes_per_token(2));
  EXPECT_EQ(PagedKvCache::block_bytes(c, 4, {KvDtype::F16, KvDtype::F32}),
            size_t(4) * 2 * 2 * (16 * 2 + 16 * 4));
  BlockManager m(7, 4, false);
  const KvFormat fmt{KvDtype::F32, KvDtype::F16};
  PagedKvCache cache(c, m, fmt);
  EXPECT_EQ(cache.bytes(), 7 * PagedKvCache::block_bytes(c, 4, fmt));
  EXPECT_EQ(cache.format(), fmt);
}

float probe(int layer, int32_t pos, int i) {
  return float((layer * 37 + pos * 5 + i * 3) % 64) / 8.0f - 3.0f;
}

// Every format, K and V in different ones, with head_dim 32 (q4's group).
class PagedLayoutTest : public ::testing::TestWithParam<KvFormat> {};

TEST_P(PagedLayoutTest, SpansAddressEveryWrittenRecordOneSpanPerBlock) {
  ModelConfig c = tiny_config();
  c.head_dim = 32;
  const KvFormat fmt = GetParam();
  BlockManager m(16, 4, false);
  const std::vector<int32_t> ids(30, 1);
  m.allocate(0, ids, 3);
  m.allocate(1, ids, 10);  // interleaved tables: seq 0 gets blocks after seq 1's
  m.append(0, 11);
  PagedKvCache cache(c, m, fmt);
  const int kv_dim = c.n_kv_head * c.head_dim;
  // What (seq, layer, pos) holds: K = probe, V = -probe shifted.
  auto value = [&](SeqId seq, int layer, int32_t pos, bool is_v, int i) {
    return is_v ? -probe(layer, pos + 100 * seq, i + 1) : probe(layer, pos + 100 * seq, i);
  };
  std::vector<float> k(static_cast<size_t>(kv_dim)), v(static_cast<size_t>(kv_dim));
  for (SeqId seq : {0, 1})
    for (int layer = 0; layer < c.n_layer; ++layer)
      for (int32_t pos = 0; pos < m.seq_tokens(seq); ++pos) {
        for (int i = 0; i < kv_dim; ++i) {
          k[size_t(i)] = value(seq, layer, pos, false, i);
          v[size_t(i)] = value(seq, layer, pos, true, i);
        }
        cache.write(layer, seq, pos, k.data(), v.data());
      }
  // The expected record of one head, through the format's own encode/decode.
  std::vector<float> src(static_cast<size_t>(c.head_dim)), want(src), got(src);
  std::vector<uint8_t> rec(
      std::max(kv_head_bytes(fmt.k, c.head_dim), kv_head_bytes(fmt.v, c.head_dim)));
  auto check = [&](KvDtype t, const uint8_t* stored, SeqId seq, int layer, int32_t pos, int h,
                   bool is_v) {
    for (int d = 0; d < c.head_dim; ++d)
      src[size_t(d)] = value(seq, layer, pos, is_v, h * c.head_dim + d);
    kv_encode_head(t, src.data(), rec.data(), c.head_dim);
    kv_decode_head(t, rec.data(), want.data(), c.head_dim);
    kv_decode_head(t, stored, got.data(), c.head_dim);
    ASSERT_EQ(got, want) << (is_v ? "V" : "K") << " seq " << seq << " layer " << layer << " pos "
                         << pos << " head " << h;
  };
  for (SeqId seq : {0, 1})
    for (int layer = 0; layer < c.n_layer; ++layer) {
      const int32_t n = m.seq_tokens(seq) - 1;  // a partial last span
      std::vector<KvSpan> spans;
      cache.spans(layer, seq, 0, n, spans);
      ASSERT_EQ(int32_t(spans.size()), m.blocks_for(n));
      int32_t pos = 0;
      for (size_t s = 0; s < spans.size(); ++s) {
        const KvSpan& sp = spans[s];
        EXPECT_EQ(sp.n, std::min<int32_t>(4, n - int32_t(s) * 4));
        for (int32_t j = 0; j < sp.n; ++j, ++pos)
          for (int h = 0; h < c.n_kv_head; ++h) {
            check(fmt.k, sp.k + size_t(j) * sp.k_pos_stride + size_t(h) * sp.k_head_stride, seq,
                  layer, pos, h, false);
            check(fmt.v, sp.v + size_t(j) * sp.v_pos_stride + size_t(h) * sp.v_head_stride, seq,
                  layer, pos, h, true);
            if (HasFatalFailure()) return;
          }
      }
    }
}

std::vector<KvFormat> mixed_formats() {
  std::vector<KvFormat> out;
  const size_t n = std::size(kAllKvDtypes);
  for (size_t i = 0; i < n; ++i) out.push_back({kAllKvDtypes[i], kAllKvDtypes[(i + 1) % n]});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Formats, PagedLayoutTest, ::testing::ValuesIn(mixed_formats()),
                         [](const auto& param_info) {
                           return std::string(kv_dtype_name(param_info.param.k)) + "_" +
                                  kv_dtype_name(param_info.param.v);
                         });

TEST(PagedKvCacheTest, RefusesPositionsSequencesAndBlocksOutsideTheTables) {
  const ModelConfig c = tiny_config();
  BlockManager m(4, 4, false);
  const std::vector<int32_t> ids(8, 1);
  m.allocate(0, ids, 6);
  PagedKvCache cache(c, m, {});
  const std::vector<float> kv(size_t(c.n_kv_head * c.head_dim), 1.0f);
  std::vector<KvSpan> spans;
  EXPECT_NO_THROW(cache.write(1, 0, 5, kv.data(), kv.data()));
  EXPECT_THROW(cache.write(0, 0, 6, kv.data(), kv.data()), std::out_of_range);  // not reserved
  EXPECT_THROW(cache.write(0, 0, -1, kv.data(), kv.data()), std::out_of_range);
  EXPECT_THROW(cache.write(2, 0, 0, kv.data(), kv.data()), std::out_of_range);  // layer
  EXPECT_THROW(cache.write(0, 3, 0, kv.data(), kv.data()), std::out_of_range);  // no such seq
  EXPECT_THROW(cache.spans(0, 0, 0, 7, spans), std::out_of_range);
  EXPECT_THROW(cache.spans(0, 3, 0, 1, spans), std::out_of_range);
  EXPECT_TRUE(spans.empty());
  EXPECT_THROW(cache.copy_block(0, 4), std::out_of_range);
  EXPECT_THROW(cache.copy_block(-1, 0), std::out_of_range);
  try {
    cache.write(0, 0, 9, kv.data(), kv.data());
    FAIL();
  } catch (const std::out_of_range& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sequence 0, position 9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("6 reserved"), std::string::npos) << msg;
  }
  // A forked sequence must copy its shared partial block before writing it.
  m.fork(0, 1);
  EXPECT_THROW(cache.write(0, 1, 5, kv.data(), kv.data()), std::logic_error);
  EXPECT_THROW(cache.write(0, 0, 5, kv.data(), kv.data()), std::logic_error);
}

// --- forward passes ----------------------------------------------------------------

struct Chunk {
  SeqId seq;
  std::vector<int32_t> tokens;
};

// Runs steps of chunks through one KvStore, keeping each sequence's length.
class StepRunner {
 public:
  StepRunner(const Model& model, KvStore& kv) : model_(model), kv_(kv), scratch_(model.config()) {
    scratch_.reserve(64, pool_.size());
  }
  // Logits of every token of the step, [n_tokens][n_vocab], in chunk order.
  std::vector<float> run(const std::vector<Chunk>& chunks) {
    std::vector<int32_t> tokens, positions, seqs, rows;
    for (const Chunk& c : chunks)
      for (const int32_t t : c.tokens) {
        rows.push_back(int32_t(tokens.size()));
        tokens.push_back(t);
        positions.push_back(len_[c.seq]++);
        seqs.push_back(c.seq);
      }
    std::vector<float> logits(rows.size() * size_t(model_.config().n_vocab));
    forward(model_, {tokens, positions, seqs, rows}, kv_, scratch_, pool_, logits.data());
    return logits;
  }
  // The child continues from the parent's length (its K/V is shared, not recomputed).
  void fork(SeqId parent, SeqId child) { len_[child] = len_[parent]; }

 private:
  const Model& model_;
  KvStore& kv_;
  ThreadPool pool_{2};
  ForwardScratch scratch_;
  std::map<SeqId, int32_t> len_;
};

int32_t argmax(const float* v, int n) { return int32_t(std::max_element(v, v + n) - v); }

struct ForwardCase {
  int32_t block_size;
  KvFormat format;
  float ref_tolerance;
};

class PagedForwardTest : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(PagedForwardTest, ManySequencesPerStepMatchContiguousBitsAndTheReference) {
  const ForwardCase fc = GetParam();
  const auto model = testing::make_test_model(tiny_spec());
  const ModelConfig& config = model->config();
  const int n_vocab = config.n_vocab;
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 72, 101, 108, 108, 111, 44, 35, 119, 111, 114, 108, 100},
      {1, 84, 104, 101, 35, 113, 117},
      {1,   65,  32,  108, 111, 110, 103, 101, 114, 32, 112,
       114, 111, 109, 112, 116, 44,  32,  115, 111, 33}};
  const int n_seqs = int(prompts.size());
  const int n_decode = 6;

  BlockManager m(3 * ((64 + fc.block_size - 1) / fc.block_size) + 2, fc.block_size, false);
  // An unrelated sequence holds the first block: no table starts at block 0.
  const std::vector<int32_t> filler(1, 0);
  m.allocate(99, filler, 1);
  PagedKvCache paged(config, m, fc.format);
  ContiguousKvCache contiguous(config, 64, fc.format, n_seqs);
  StepRunner run_paged(*model, paged), run_contiguous(*model, contiguous);
  std::vector<testing::ReferenceForward> refs;
  for (int s = 0; s < n_seqs; ++s) refs.emplace_back(*model, 64);

  float worst_ref = 0;
  auto step = [&](const std::vector<Chunk>& chunks) {
    const std::vector<float> got = run_paged.run(chunks);
    const std::vector<float> want = run_contiguous.run(chunks);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "paged logits differ from contiguous ones";
    size_t row = 0;
    for (const Chunk& c : chunks) {
      const int32_t first_pos = m.seq_tokens(c.seq) - int32_t(c.tokens.size());
      for (size_t i = 0; i < c.tokens.size(); ++i, ++row) {
        const std::vector<float> ref =
            refs[size_t(c.seq)].forward(c.tokens[i], first_pos + int32_t(i));
        for (int j = 0; j < n_vocab; ++j)
          worst_ref =
              std::max(worst_ref, std::abs(got[row * n_vocab + size_t(j)] - ref[size_t(j)]));
      }
    }
    return got;
  };
  // Chunked prefill, sequences out of order within a step, all in one forward call.
  m.allocate(0, prompts[0], 8);
  m.allocate(1, prompts[1], 7);
  m.allocate(2, prompts[2], 10);
  const std::vector<float> first = step({{2, {prompts[2].begin(), prompts[2].begin() + 10}},
                                         {0, {prompts[0].begin(), prompts[0].begin() + 8}},
                                         {1, prompts[1]}});
  m.append(0, 5);
  m.append(2, 11);
  std::vector<float> logits = step({{0, {prompts[0].begin() + 8, prompts[0].end()}},
                                    {2, {prompts[2].begin() + 10, prompts[2].end()}}});
  // Greedy decode of all three together; the last prompt row of each gives its first token.
  std::vector<int32_t> next = {argmax(&logits[size_t(4) * n_vocab], n_vocab),
                               argmax(&first[size_t(10 + 8 + 7 - 1) * n_vocab], n_vocab),
                               argmax(&logits[size_t(5 + 11 - 1) * n_vocab], n_vocab)};
  for (int d = 0; d < n_decode; ++d) {
    std::vector<Chunk> chunks;
    for (SeqId s = 0; s < n_seqs; ++s) {
      m.append(s, 1);
      chunks.push_back({s, {next[size_t(s)]}});
    }
    logits = step(chunks);
    for (int s = 0; s < n_seqs; ++s)
      next[size_t(s)] = argmax(&logits[size_t(s) * n_vocab], n_vocab);
  }
  EXPECT_TRUE(m.take_pending_copies().empty());
  EXPECT_LE(worst_ref, fc.ref_tolerance);
  // The test only means something if the tables really are scattered.
  if (fc.block_size <= 4) {
    const auto t = m.block_table(0);
    bool scattered = false;
    for (size_t i = 1; i < t.size(); ++i) scattered |= t[i] != t[i - 1] + 1;
    EXPECT_TRUE(scattered);
  }
  EXPECT_NE(m.block_table(0)[0], 0);
}

// Against the f32 reference a stored format adds its own rounding (paged vs
// contiguous stays bit-identical, the sharp check): f16 keeps 11 significant
// bits (relative error <= 2^-12), measured 4.8e-4 on these logits, bound 5e-3;
// int8 rounds to amax/127 steps per token and head (error <= 0.4 % of amax),
// measured 1.2e-2, bound 6e-2. A wrong block, offset or head in the paged
// store moves logits by far more (and breaks the bitwise check first).
INSTANTIATE_TEST_SUITE_P(BlockSizes, PagedForwardTest,
                         ::testing::Values(ForwardCase{1, {}, 1e-4f}, ForwardCase{4, {}, 1e-4f},
                                           ForwardCase{16, {}, 1e-4f}, ForwardCase{256, {}, 1e-4f},
                                           ForwardCase{4, {KvDtype::F16, KvDtype::F16}, 5e-3f},
                                           ForwardCase{16, {KvDtype::F16, KvDtype::F32}, 5e-3f},
                                           ForwardCase{4, {KvDtype::Int8, KvDtype::Int8}, 6e-2f},
                                           ForwardCase{1, {KvDtype::BF16, KvDtype::Int8}, 6e-2f}),
                         [](const auto& param_info) {
                           return "bs" + std::to_string(param_info.param.block_size) + "_" +
                                  kv_dtype_name(param_info.param.format.k) + "_" +
                                  kv_dtype_name(param_info.param.format.v);
                         });

TEST(PagedForwardTest, CopyOnWriteThenDivergentDecodeKeepsTheParentIntact) {
  const auto model = testing::make_test_model(tiny_spec());
  const ModelConfig& config = model->config();
  const int n_vocab = config.n_vocab;
  const std::vector<int32_t> prompt = {1, 72, 101, 108, 108, 111};  // 6 tokens: 1.5 blocks
  BlockManager m(16, 4, false);
  PagedKvCache paged(config, m, {});
  ContiguousKvCache contiguous(config, 64, {}, 2);
  StepRunner run_paged(*model, paged), run_contiguous(*model, contiguous);

  m.allocate(0, prompt, 6);
  run_paged.run({{0, prompt}});
  // The contiguous side computes both sequences from scratch: no sharing at all.
  run_contiguous.run({{0, prompt}, {1, prompt}});
  m.fork(0, 1);
  run_paged.fork(0, 1);
  const BlockId shared_partial = m.block_table(0)[1];
  int32_t a = 40, b = 41;  // the two sides diverge at once
  for (int d = 0; d < 5; ++d) {
    m.append(1, 1);  // the child appends first: it gets the copy
    m.append(0, 1);
    for (const BlockCopy& c : m.take_pending_copies()) paged.copy_block(c.src, c.dst);
    const std::vector<Chunk> chunks = {{1, {b}}, {0, {a}}};
    const std::vector<float> got = run_paged.run(chunks);
    const std::vector<float> want = run_contiguous.run(chunks);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "decode step " << d;
    b = argmax(&got[0], n_vocab);
    a = argmax(&got[size_t(n_vocab)], n_vocab);
    if (a == b) b = (b + 1) % n_vocab;  // keep them apart
  }
  EXPECT_EQ(m.block_table(0)[1], shared_partial);  // the parent kept its block
  EXPECT_NE(m.block_table(1)[1], shared_partial);
  EXPECT_EQ(m.block_table(0)[0], m.block_table(1)[0]);  // the full block is still shared
}

}  // namespace
}  // namespace kvforge
