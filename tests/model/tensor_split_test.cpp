// How models are cut over tensor-parallel ranks (model/tensor_split.h): the
// column parts depend on the model only, every rank's share adds up to the
// whole, and what cannot be split is refused with the reason.
#include "model/tensor_split.h"

#include <gtest/gtest.h>

#include <numeric>

#include "model/random_model.h"
#include "test_models.h"

namespace kvforge {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.n_vocab = 32001;
  c.n_embd = 768;
  c.n_head = 12;
  c.n_kv_head = 4;
  c.head_dim = 64;
  c.n_ff = 2048;
  c.n_layer = 2;
  return c;
}

// TensorSplit::of refuses n_ranks with a message holding `why`.
void expect_refused(const ModelConfig& c, std::span<const GgmlType> attn,
                    std::span<const GgmlType> ffn, int n_ranks, const std::string& why) {
  try {
    TensorSplit::of(c, attn, ffn, 0, n_ranks);
    ADD_FAILURE() << n_ranks << " ranks accepted, expected: " << why;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(TensorSplit, PartsDependOnTheModelNotOnTheRanks) {
  const ModelConfig c = small_config();
  const std::vector<GgmlType> q8(2, GgmlType::Q8_0);
  for (int n : {1, 2, 4}) {
    int64_t vocab = 0;
    for (int r = 0; r < n; ++r) {
      const TensorSplit s = TensorSplit::of(c, q8, q8, r, n);
      EXPECT_EQ(s.attn_parts, 4);  // one per KV head: 192 columns, whole Q8_0 blocks
      EXPECT_EQ(s.ffn_parts, 4);   // at most 4: 12 query heads take at most 4 ranks
      EXPECT_EQ(s.n_kv_head * n, c.n_kv_head);
      EXPECT_EQ(s.n_head * n, c.n_head);
      EXPECT_EQ(s.n_ff * n, c.n_ff);
      EXPECT_EQ(s.vocab_first[size_t(r)], vocab);
      if (r + 1 < n) {
        EXPECT_EQ(s.vocab_rows[size_t(r)] % kVocabRowQuantum, 0);
      }
      vocab += s.vocab_rows[size_t(r)];
      const ModelConfig rc = s.rank_config(c);
      EXPECT_EQ(rc.kv_dim() * n, c.kv_dim());
      EXPECT_EQ(rc.n_vocab, c.n_vocab);
    }
    EXPECT_EQ(vocab, c.n_vocab);
  }
}

TEST(TensorSplit, PartsHoldWholeQuantizationBlocks) {
  const ModelConfig c = small_config();
  // 192 columns per KV head do not hold whole Q4_K blocks of 256: parts of
  // 384 (2) or 768 (1) columns neither; so attn_output stays one part.
  const std::vector<GgmlType> q4k(2, GgmlType::Q4_K);
  const TensorSplit s = TensorSplit::of(c, q4k, q4k, 0, 1);
  EXPECT_EQ(s.attn_parts, 1);
  EXPECT_EQ(s.ffn_parts, 4);  // 512 columns: two Q4_K blocks
  expect_refused(c, q4k, q4k, 2, "attn_output splits into 1 column parts");
}

// Gemma 4's double-wide FFN: one part count for every layer, whole blocks
// at each layer's width; each rank keeps 1/n of each layer's rows.
TEST(TensorSplit, PerLayerFfnWidthsShareOnePartCount) {
  ModelConfig c = small_config();
  c.n_ff = 1024;
  c.n_ff_layers = {512, 1024};
  const std::vector<GgmlType> f32(2, GgmlType::F32), q4k(2, GgmlType::Q4_K);
  // 512 columns: at most 2 parts of one Q4_K block (1024 alone would take 4).
  EXPECT_EQ(TensorSplit::of(c, f32, q4k, 0, 1).ffn_parts, 2);
  EXPECT_EQ(TensorSplit::of(c, f32, f32, 0, 1).ffn_parts, 4);
  const TensorSplit s = TensorSplit::of(c, f32, q4k, 1, 2);
  const ModelConfig rc = s.rank_config(c);
  EXPECT_EQ(rc.layer_n_ff(0), 256);
  EXPECT_EQ(rc.layer_n_ff(1), 512);
  EXPECT_EQ(rc.n_ff, 512);  // the widest layer's share: scratch fits every layer
  // The narrow layer's 512 columns are not 4 parts of whole Q4_K blocks: refused at 4 ranks.
  expect_refused(c, f32, q4k, 4, "ffn_down splits into 2 column parts");
}

TEST(TensorSplit, RefusesRanksThatDoNotDivideTheKvHeads) {
  const ModelConfig c = small_config();
  const std::vector<GgmlType> f32(2, GgmlType::F32);
  expect_refused(c, f32, f32, 3, "4 KV heads do not divide evenly");
  EXPECT_THROW(TensorSplit::of(c, f32, f32, 0, 8), std::invalid_argument);
}

// More ranks than KV heads: each holds the one KV head its query heads read.
TEST(TensorSplit, ReplicatesKvHeadsBeyondTheirCount) {
  ModelConfig c = small_config();
  c.n_head = 8;
  c.n_kv_head = 2;
  c.head_dim = 96;
  const std::vector<GgmlType> f32(2, GgmlType::F32);
  const int first_kv[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) {
    const TensorSplit s = TensorSplit::of(c, f32, f32, r, 4);
    EXPECT_EQ(s.kv_replicas, 2);
    EXPECT_EQ(s.n_kv_head, 1);
    EXPECT_EQ(s.n_head, 2);
    EXPECT_EQ(s.first_kv_head(), first_kv[r]);
    // Rank r's query heads [2r, 2r + 2) belong to KV head (2r) / (8 / 2).
    EXPECT_EQ(s.first_head() / (c.n_head / c.n_kv_head), s.first_kv_head());
    EXPECT_EQ(s.attn_parts, 8);
  }
  EXPECT_THROW(TensorSplit::of(c, f32, f32, 0, 16), std::invalid_argument);  // 8 query heads
}

// A mixture of experts: every rank holds 1/n of each expert's gate/up rows,
// of the shared expert's, and of each expert's output rows.
TEST(TensorSplit, ExpertsSplitTheirRowsAndOutputs) {
  ModelConfig c = small_config();
  c.moe.n_expert = 8;
  c.moe.n_expert_used = 2;
  c.moe.n_ff_exp = 96;
  c.moe.n_ff_shexp = 64;
  const std::vector<GgmlType> q8(2, GgmlType::Q8_0);
  for (int n : {1, 2, 4})
    for (int r = 0; r < n; ++r) {
      const TensorSplit s = TensorSplit::of(c, q8, q8, r, n);
      EXPECT_EQ(s.n_ff_exp * n, c.moe.n_ff_exp);
      EXPECT_EQ(s.first_ff_exp(), r * c.moe.n_ff_exp / n);
      EXPECT_EQ(s.n_ff_shexp * n, c.moe.n_ff_shexp);
      EXPECT_EQ(s.n_embd_rows * n, c.n_embd);
      EXPECT_EQ(s.first_embd_row(), r * c.n_embd / n);
      EXPECT_EQ(s.ffn_parts, 1);  // no dense ffn_down
      const ModelConfig rc = s.rank_config(c);
      EXPECT_EQ(rc.moe.n_ff_exp, c.moe.n_ff_exp / n);
      EXPECT_EQ(rc.moe.n_ff_shexp, c.moe.n_ff_shexp / n);
      EXPECT_EQ(rc.n_embd, c.n_embd);
    }
  c.moe.n_ff_exp = 90;  // 2 ranks take 45 rows each, 4 ranks cannot share them
  EXPECT_NO_THROW(TensorSplit::of(c, q8, q8, 0, 2));
  expect_refused(c, q8, q8, 4, "90 rows of each expert do not divide evenly");
}

// Gemma 4's MoE variant has a dense FFN beside its experts: its ffn_down
// takes the column parts a dense model's would (the same at any rank count),
// and its experts split their rows as any mixture's.
TEST(TensorSplit, Gemma4ExpertsBesideTheDenseFfnSplitBoth) {
  ModelConfig c = small_config();
  const std::vector<GgmlType> q8(2, GgmlType::Q8_0);
  const int dense_parts = TensorSplit::of(c, q8, q8, 0, 1).ffn_parts;
  c.arch = Architecture::Gemma4;
  c.moe.n_expert = 8;
  c.moe.n_expert_used = 2;
  c.moe.n_ff_exp = 96;
  ASSERT_TRUE(c.experts_beside_ffn());
  for (int n : {1, 2, 4})
    for (int r = 0; r < n; ++r) {
      const TensorSplit s = TensorSplit::of(c, q8, q8, r, n);
      EXPECT_EQ(s.ffn_parts, dense_parts);
      EXPECT_EQ(s.n_ff * n, c.n_ff);
      EXPECT_EQ(s.n_ff_exp * n, c.moe.n_ff_exp);
      EXPECT_EQ(s.n_embd_rows * n, c.n_embd);
    }
  c.n_ff = 2050;        // 1025 columns per rank at 2 ranks: no whole Q8_0 blocks
  std::string refusal;  // stays empty if 2 ranks split it
  try {
    TensorSplit::of(c, q8, q8, 0, 2);
  } catch (const std::invalid_argument& e) {
    refusal = e.what();
  }
  EXPECT_NE(refusal.find("ffn_down splits into 1 column parts"), std::string::npos) << refusal;
}

// One process keeps the fixed parts too: the loaded weights hold them.
TEST(TensorSplit, OneProcessModelHoldsItsColumnParts) {
  RandomModelSpec spec;
  spec.n_kv_head = 2;
  const auto model = testing::make_test_model(spec);
  EXPECT_EQ(model->tp(), 1);
  const LayerWeights& l = model->weights().layers[0];
  EXPECT_EQ(int(l.attn_output.parts.size()), model->split().attn_parts);
  EXPECT_EQ(int(l.ffn_down.parts.size()), model->split().ffn_parts);
  EXPECT_EQ(l.attn_output.cols, model->config().q_dim());
  EXPECT_EQ(l.ffn_down.cols, model->config().n_ff);
}

}  // namespace
}  // namespace kvforge
