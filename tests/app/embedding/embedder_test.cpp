// Embeddings of the default model against llama.cpp's llama-embedding on the
// same file (tests/app/embedding/data/kjv_embeddings.json, written by
// tools/embedding_golden/make_embedding_golden.py), for last-token and mean
// pooling, both L2-normalised.
#include "app/embedding/embedder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/embedding/embedding_run.h"
#include "app/tokenizer/tokenizer.h"
#include "testdata.h"

namespace kvforge {
namespace {

const std::filesystem::path kModel = testing::source_dir() / "models" / "kvforge-kjv-4m.gguf";
const std::filesystem::path kGolden =
    testing::source_dir() / "tests" / "app" / "embedding" / "data" / "kjv_embeddings.json";

class EmbedderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(kModel).release(); }
  static void TearDownTestSuite() { delete model_; }
  static Model* model_;
};
Model* EmbedderTest::model_ = nullptr;

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Tolerance: max |difference| 1e-4 per component of the unit vectors, cosine
// above 1 - 1e-7. The weights are f16, K/V f32 on both sides; llama.cpp rounds
// the activations to f16 (11-bit mantissa, relative error 2^-11) for its f16
// dot products where kvforge keeps them f32, which moves components by up to
// 2.7e-5 here (cosine 1 - 9e-9); the golden is printed with 7 decimals.
TEST_F(EmbedderTest, MatchesLlamaEmbeddingForLastAndMeanPooling) {
  std::ifstream in(kGolden);
  ASSERT_TRUE(in) << kGolden;
  const nlohmann::json golden = nlohmann::json::parse(in);
  const Tokenizer tok = Tokenizer::from_gguf(model_->file());
  ThreadPool pool(2);
  ASSERT_EQ(golden["cases"].size(), 4u);
  for (const auto& c : golden["cases"]) {
    const Pooling pooling = *pooling_from_name(c["pooling"].get<std::string>());
    const Embedder embedder(*model_, pool, pooling);
    const std::vector<float> want = c["embedding"].get<std::vector<float>>();
    const std::vector<float> got =
        embedder.embed(tok.encode(c["text"].get<std::string>(), true, false));
    ASSERT_EQ(got.size(), want.size());
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      max_diff = std::max(max_diff, double(std::fabs(got[i] - want[i])));
    SCOPED_TRACE(c["pooling"].get<std::string>() + ": " + c["text"].get<std::string>());
    EXPECT_LT(max_diff, 1e-4);
    EXPECT_GT(cosine(got, want), 1 - 1e-7);
  }
}

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
