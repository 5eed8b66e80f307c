// The int8 KV acceptance thresholds on the shipped default model, over 1024
// tokens of its validation text (4 windows of 256, 1020 predictions): logits cosine ≥ 0.999 and
// top-1 agreement ≥ 99 % against an f32 KV cache.
#include "app/tools/kv_eval.h"

#include <gtest/gtest.h>

#include "app/cli/cli_common.h"
#include "app/tokenizer/tokenizer.h"
#include "testdata.h"

namespace kvforge {
namespace {

class KvEvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto dir = testing::source_dir() / "models";
    model_ = Model::load(dir / "kvforge-kjv-4m.gguf").release();
    const Tokenizer tok = Tokenizer::from_gguf(model_->file());
    tokens_ = new std::vector<int32_t>(
        tok.encode(cli::read_text_file(dir / "kvforge-kjv-4m.val.txt"), tok.add_bos(), false));
    ASSERT_GE(tokens_->size(), 1025u);
    tokens_->resize(1025);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokens_;
  }
  static KvEvalResult eval(KvFormat f) {
    ThreadPool pool(2);
    return evaluate_kv_format(*model_, pool, *tokens_, {.candidate = f, .window = 256});
  }
  static Model* model_;
  static std::vector<int32_t>* tokens_;
};
Model* KvEvalTest::model_ = nullptr;
std::vector<int32_t>* KvEvalTest::tokens_ = nullptr;

TEST_F(KvEvalTest, Int8MeetsTheThresholds) {
  const KvEvalResult r = eval({KvDtype::Int8, KvDtype::Int8});
  EXPECT_EQ(r.n_predicted, 1020);  // 4 windows of 256 predict 255 each; the 1025th token is alone
  EXPECT_GE(r.logits_cosine_mean, 0.999);
  EXPECT_GE(r.top1_agreement, 0.99);
  EXPECT_GT(r.kl_mean, 0.0);  // the candidate cache really was int8
  EXPECT_LT(r.kl_mean, 1e-3);
  EXPECT_NEAR(r.ppl_candidate / r.ppl_reference, 1.0, 0.01);
  for (const auto& layer : r.k_cosine_quant_only)
    for (double c : layer) EXPECT_GT(c, 0.9999);
}

// The harness itself: f32 against f32 is identical, and 4 bits are measurably
// worse than 8.
TEST_F(KvEvalTest, F32IsExactAndQ4IsWorseThanInt8) {
  const KvEvalResult same = eval({});
  EXPECT_DOUBLE_EQ(same.logits_cosine_min, 1.0);
  EXPECT_EQ(same.top1_agreement, 1.0);
  EXPECT_EQ(same.kl_max, 0.0);
  EXPECT_EQ(same.ppl_candidate, same.ppl_reference);
  const KvEvalResult int8 = eval({KvDtype::Int8, KvDtype::Int8});
  const KvEvalResult q4 = eval({KvDtype::Q4, KvDtype::Q4});
  EXPECT_GT(q4.kl_mean, int8.kl_mean);
  EXPECT_LT(q4.logits_cosine_mean, int8.logits_cosine_mean);
  EXPECT_LT(q4.k_cosine_quant_only[0][0], int8.k_cosine_quant_only[0][0]);
}

}  // namespace
}  // namespace kvforge
