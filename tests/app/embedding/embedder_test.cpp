// Embeddings against llama.cpp's llama-embedding on the same files
// (tests/app/embedding/data/NAME_embeddings.json, written by
// tools/embedding_golden/make_embedding_golden.py): the default model and the
// random-weight qwen3 and llama files, each pooling, L2-normalised; then the
// embedder's own invariants on the default model.
#include "app/embedding/embedder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>

#include "app/embedding/embedding_run.h"
#include "embedding_golden.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::cosine;

const std::filesystem::path kModel = testing::source_dir() / "models" / "kvforge-kjv-4m.gguf";

class EmbedderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(kModel).release(); }
  static void TearDownTestSuite() { delete model_; }
  static Model* model_;
};
Model* EmbedderTest::model_ = nullptr;

struct GoldenParam {
  const char* name;
  testing::EmbeddingBound bound;
};
void PrintTo(const GoldenParam& p, std::ostream* os) { *os << p.name; }

class EmbedderGolden : public ::testing::TestWithParam<GoldenParam> {};

// Bounds (embedding_golden.h): 1e-4 per component for the default model's
// f16 weights, 2e-6 for the f32 random-weight files.
TEST_P(EmbedderGolden, MatchesLlamaEmbeddingForEveryPooling) {
  const testing::EmbeddingGolden golden = testing::read_embedding_golden(GetParam().name);
  const auto model = Model::load(golden.model);
  ThreadPool pool(2);
  testing::EmbeddingCheck check;
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last})
    check.add(
        testing::expect_golden_cases(*model, Embedder(*model, pool, p), golden, GetParam().bound));
  EXPECT_EQ(size_t(check.cases), golden.cases.size());
  EXPECT_GE(check.cases, 4);
  std::printf("%s: %d cases, max |difference| %.2e, 1 - cosine %.1e\n", GetParam().name,
              check.cases, check.max_diff, check.one_minus_cosine);
}

INSTANTIATE_TEST_SUITE_P(Models, EmbedderGolden,
                         ::testing::Values(GoldenParam{"kjv", testing::kF16WeightsBound},
                                           GoldenParam{"qwen3", testing::kF32Bound},
                                           GoldenParam{"llama", testing::kF32Bound}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// Causal attention: the first token's hidden state does not depend on what
// follows, so CLS pooling of a text is the last-token pooling of its first token.
TEST_F(EmbedderTest, ClsPoolingIsTheFirstTokensState) {
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = {1, 300, 261, 345, 394};
  const std::vector<float> cls = Embedder(*model_, pool, Pooling::Cls).embed(tokens);
  const std::vector<float> first =
      Embedder(*model_, pool, Pooling::Last).embed(std::span(tokens).first(1));
  EXPECT_EQ(cls, first);
}

// An input longer than one forward chunk (256 tokens) pools every chunk's rows:
// its mean differs from its first chunk's, and the result is a unit vector.
TEST_F(EmbedderTest, LongInputsPoolAcrossChunks) {
  ThreadPool pool(2);
  std::vector<int32_t> tokens(300);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(300 + i % 200);
  const Embedder mean(*model_, pool, Pooling::Mean);
  const std::vector<float> all = mean.embed(tokens);
  const std::vector<float> head = mean.embed(std::span(tokens).first(256));
  double norm = 0;
  for (float x : all) norm += double(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  EXPECT_LT(cosine(all, head), 1 - 1e-6);
}

// Batch invariance: inputs computed together (pieces of several in one
// forward call, a long input cut at other places than alone) give the same
// bits as each alone, for every pooling.
TEST_F(EmbedderTest, BatchEqualsEachInputAlone) {
  ThreadPool pool(2);
  std::vector<std::vector<int32_t>> inputs;
  for (int n : {5, 1, 300, 17, 250, 3, 40}) {
    std::vector<int32_t>& t = inputs.emplace_back();
    for (int i = 0; i < n; ++i) t.push_back(int32_t(260 + (i * 7 + n) % 300));
  }
  for (Pooling p : {Pooling::Mean, Pooling::Last, Pooling::Cls}) {
    const Embedder embedder(*model_, pool, p);
    const std::vector<std::vector<float>> batch = embedder.embed_batch(inputs);
    ASSERT_EQ(batch.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      SCOPED_TRACE(std::string(pooling_name(p)) + " input " + std::to_string(i));
      EXPECT_EQ(batch[i], embedder.embed(inputs[i]));
    }
  }
  const std::vector<std::vector<int32_t>> with_empty = {{1, 2}, {}};
  EXPECT_THROW(Embedder(*model_, pool, Pooling::Mean).embed_batch(with_empty),
               std::invalid_argument);
}

// A run is one forward call per step of at most 256 tokens (the bound on how
// long a step holds the server's engine loop), as many calls as the inputs'
// tokens need, and the same vectors as embed_batch.
TEST_F(EmbedderTest, RunStepsHoldAtMostOneChunkEach) {
  ThreadPool pool(2);
  const Embedder embedder(*model_, pool, Pooling::Mean);
  std::vector<std::vector<int32_t>> inputs;
  size_t total = 0;
  for (int n : {300, 7, 200, 64}) {
    std::vector<int32_t>& t = inputs.emplace_back();
    for (int i = 0; i < n; ++i) t.push_back(int32_t(270 + (i * 5 + n) % 250));
    total += size_t(n);
  }
  EmbeddingRun run(embedder, inputs);
  size_t steps = 0;
  while (!run.finished()) {
    run.step();
    ++steps;
  }
  EXPECT_EQ(steps, (total + EmbeddingRun::kChunkTokens - 1) / EmbeddingRun::kChunkTokens);
  EXPECT_EQ(run.results(), embedder.embed_batch(inputs));
}

TEST(ShortenEmbeddingTest, KeepsTheLeadingComponentsAtUnitLength) {
  const std::vector<float> v = {0.6f, 0.0f, 0.8f, 0.0f};
  EXPECT_EQ(shorten_embedding(v, 4), v);
  const std::vector<float> two = shorten_embedding(v, 2);
  EXPECT_EQ(two, (std::vector<float>{1.0f, 0.0f}));
  const std::vector<float> three = shorten_embedding({3.0f, 4.0f, 12.0f, 1.0f}, 3);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_FLOAT_EQ(three[0], 3.0f / 13);
  EXPECT_FLOAT_EQ(three[2], 12.0f / 13);
  EXPECT_EQ(shorten_embedding({0.0f, 0.0f, 1.0f}, 2), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_THROW(shorten_embedding(v, 0), std::invalid_argument);
  EXPECT_THROW(shorten_embedding(v, 5), std::invalid_argument);
}

// llama.cpp's --embd-normalize numbering: each norm makes its measure 1.
TEST(NormalizeEmbeddingTest, EachNormScalesToItsOwnUnit) {
  const std::vector<float> v = {3.0f, -4.0f, 0.0f, 12.0f};
  auto scaled = [&](int norm) {
    std::vector<float> out = v;
    normalize_embedding(out, norm);
    return out;
  };
  EXPECT_EQ(scaled(kEmbdNormNone), v);
  EXPECT_FLOAT_EQ(scaled(kEmbdNormMaxAbs)[3], 32760.0f);
  EXPECT_FLOAT_EQ(scaled(kEmbdNormMaxAbs)[0], 3.0f * 32760 / 12);
  EXPECT_FLOAT_EQ(scaled(1)[1], -4.0f / 19);
  EXPECT_FLOAT_EQ(scaled(kEmbdNormEuclidean)[3], 12.0f / 13);
  const std::vector<float> cubic = scaled(3);
  double sum = 0;
  for (float x : cubic) sum += std::pow(std::fabs(double(x)), 3);
  EXPECT_NEAR(sum, 1.0, 1e-6);
  std::vector<float> bad = v;
  EXPECT_THROW(normalize_embedding(bad, -2), std::invalid_argument);
  ThreadPool pool(1);
  EXPECT_THROW(Embedder(*Model::load(kModel), pool, Pooling::Last, -3), std::invalid_argument);
}

TEST(PoolingTest, NamesRoundTrip) {
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last})
    EXPECT_EQ(pooling_from_name(pooling_name(p)), p);
  EXPECT_FALSE(pooling_from_name("rank"));
}

}  // namespace
}  // namespace kvforge
