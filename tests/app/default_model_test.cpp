// The shipped default model against the PyTorch implementation it was trained
// with (tools/train): the same validation perplexity, the same greedy
// continuation, and the same tokenization as SentencePiece. The reference
// files are written by tools/train/make_references.py from the shipped GGUF.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/tokenizer/tokenizer.h"
#include "app/tools/perplexity.h"
#include "engine/sequence_runner.h"
#include "sanitized.h"
#include "testdata.h"

namespace kvforge {
namespace {

const std::filesystem::path kModelDir = testing::source_dir() / "models";
constexpr const char* kModelName = "kvforge-kjv-4m";

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

class DefaultModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(kModelDir / (std::string(kModelName) + ".gguf")).release();
    reference_ =
        new nlohmann::json(read_json(kModelDir / (std::string(kModelName) + ".reference.json")));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete reference_;
  }
  static Model* model_;
  static nlohmann::json* reference_;
};
Model* DefaultModelTest::model_ = nullptr;
nlohmann::json* DefaultModelTest::reference_ = nullptr;

// Sanitizer builds run the same code about 15x slower: they score the first
// windows only (each against its own reference), the optimised build all of them.
#if KVFORGE_SANITIZED
constexpr size_t kMaxWindows = 12;
#else
constexpr size_t kMaxWindows = SIZE_MAX;
#endif

// Tolerance 1 % of the perplexity (0.01 nats of mean NLL): both sides run the
// same weights in f32; they differ only in summation order, which moves the
// mean NLL by ~1e-5 nats, far inside it.
TEST_F(DefaultModelTest, ValidationPerplexityMatchesPyTorchWithinOnePercent) {
  const auto& ref = (*reference_)["perplexity"];
  const int ctx = ref["context_length"];
  const Tokenizer tok = Tokenizer::from_gguf(model_->file());
  std::ifstream in(kModelDir / ref["text_file"].get<std::string>(), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<int32_t> tokens = tok.encode(text, /*add_bos=*/true, /*parse_special=*/false);
  ASSERT_EQ(int64_t(tokens.size()), ref["n_tokens"].get<int64_t>()) << "tokenization differs";
  ThreadPool pool(2);
  SequenceRunner runner(*model_, pool, {.n_ctx = ctx, .max_batch = ctx, .kv_format = {}});
  // The reference scores full windows; the partial tail, when present, is reported beside.
  const std::vector<double> window_nll = ref["window_mean_nll"];
  const size_t n_windows = std::min(tokens.size() / size_t(ctx), kMaxWindows);
  ASSERT_LE(n_windows, window_nll.size());
  if (n_windows < window_nll.size())
    std::printf("[ default ] sanitizer build: scoring the first %zu of %zu windows\n", n_windows,
                window_nll.size());
  PerplexityResult all;
  for (size_t w = 0; w < n_windows; ++w) {
    const auto window = std::span(tokens).subspan(w * size_t(ctx), size_t(ctx));
    const PerplexityResult r = compute_perplexity(runner, window, ctx);
    EXPECT_NEAR(r.mean_nll(), window_nll[w], 0.01) << "window " << w;
    all.nll_sum += r.nll_sum;
    all.n_predicted += r.n_predicted;
  }
  if (n_windows < window_nll.size()) return;
  const double want = ref["perplexity"];
  std::printf("[ default ] perplexity kvforge %.5f vs PyTorch %.5f (%lld predictions)\n",
              all.perplexity(), want, static_cast<long long>(all.n_predicted));
  EXPECT_EQ(all.n_predicted, ref["n_predictions"].get<int64_t>());
  EXPECT_NEAR(all.perplexity(), want, 0.01 * want);
}

TEST_F(DefaultModelTest, GreedyContinuationEqualsPyTorch) {
  const auto& ref = (*reference_)["greedy"];
  const std::vector<int32_t> prompt = ref["prompt_ids"];
  const std::vector<int32_t> want = ref["generated_ids"];
  ASSERT_GE(want.size(), 64u);
  const Tokenizer tok = Tokenizer::from_gguf(model_->file());
  EXPECT_EQ(tok.encode(ref["prompt"].get<std::string>(), true, false), prompt);
  ThreadPool pool(2);
  SequenceRunner runner(*model_, pool, {.n_ctx = model_->config().n_ctx_train});
  std::span<const float> logits = runner.prefill(prompt);
  std::vector<int32_t> got;
  for (size_t i = 0; i < want.size(); ++i) {
    got.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    logits = runner.decode(got.back());
  }
  EXPECT_EQ(got, want);
}

TEST_F(DefaultModelTest, TokenizerMatchesSentencePiece) {
  const nlohmann::json cases =
      read_json(kModelDir / (std::string(kModelName) + ".tokenizer-vectors.json"));
  ASSERT_GE(cases.size(), 300u);
  const Tokenizer tok = Tokenizer::from_gguf(model_->file());
  size_t passed = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const std::vector<int32_t> want = c["ids"];
    const auto got = tok.encode(text, /*add_bos=*/false, /*parse_special=*/false);
    if (got == want) {
      ++passed;
    } else {
      ADD_FAILURE() << "text: '" << text << "'";
    }
  }
  std::printf("[ default ] tokenizer: %zu / %zu SentencePiece vectors\n", passed, cases.size());
}

}  // namespace
}  // namespace kvforge
