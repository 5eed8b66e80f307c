// How a Gated DeltaNet layer is cut over tensor-parallel ranks
// (model/linear_attention_tp.h): each rank's copied rows are the rows of its
// key heads and of the value heads that read them, in the order the layer's
// own code expects; its recurrent state holds its heads only. The logits of
// 2 and 4 ranks against one process's bits: tensor_parallel_mpi.
#include "model/linear_attention_tp.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/formats/row_codec.h"
#include "model/model_weights.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

// Whether row `mine` of m equals row `whole_row` of whole (the same bytes).
bool same_row(const WeightView& m, int64_t mine, const WeightView& whole, int64_t whole_row) {
  const size_t rb = row_bytes(m.type, size_t(m.cols));
  return std::memcmp(static_cast<const uint8_t*>(m.data) + size_t(mine) * rb,
                     static_cast<const uint8_t*>(whole.data) + size_t(whole_row) * rb, rb) == 0;
}

// Rank 1 of 2 of a file with 2 key heads and 4 value heads (d = 16): key
// head 1, and the value heads that read it: 1 and 3 (tiled, qwen35: head h
// reads key head h % 2) or 2 and 3 (grouped, qwen3next).
TEST(LinearAttentionTp, RankHoldsItsKeyHeadsAndTheirValueHeads) {
  for (const char* arch : {"qwen35", "qwen3next"}) {
    RandomModelSpec spec;
    spec.arch = arch;
    spec.n_layer = 4;
    const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
    const gguf::GgufFile file = gguf::GgufFile::from_bytes(bytes, arch);
    const ModelConfig c = ModelConfig::from_gguf(file);
    ASSERT_EQ(c.linear.n_k_heads, 2);
    ASSERT_EQ(c.linear.n_v_heads, 4);
    const int64_t d = c.linear.head_dim, kd = c.linear.key_dim();
    const bool tiled = std::string(arch) == "qwen35";
    const int64_t heads[2] = {tiled ? 1 : 2, 3};
    const ModelWeights whole = ModelWeights::from_gguf(file, c);
    const ModelWeights half = ModelWeights::from_gguf(file, c, 1, 2);
    const LinearAttentionWeights& w = whole.layers[0].linear;
    const LinearAttentionWeights& m = half.layers[0].linear;
    ASSERT_EQ(m.qkv.rows, c.linear.conv_channels() / 2) << arch;
    for (int64_t i = 0; i < d; ++i) {
      EXPECT_TRUE(same_row(m.qkv, i, w.qkv, d + i)) << arch;           // q of key head 1
      EXPECT_TRUE(same_row(m.qkv, d + i, w.qkv, kd + d + i)) << arch;  // k of key head 1
      for (int j = 0; j < 2; ++j) {
        EXPECT_TRUE(same_row(m.qkv, 2 * d + j * d + i, w.qkv, 2 * kd + heads[j] * d + i)) << arch;
        EXPECT_TRUE(same_row(m.gate, j * d + i, w.gate, heads[j] * d + i)) << arch;
        EXPECT_EQ(m.conv[size_t((2 * d + j * d + i) * c.linear.conv_kernel)],
                  w.conv[size_t((2 * kd + heads[j] * d + i) * c.linear.conv_kernel)]);
      }
    }
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(m.dt_bias[size_t(j)], w.dt_bias[size_t(heads[j])]) << arch;
      EXPECT_EQ(m.a[size_t(j)], w.a[size_t(heads[j])]) << arch;
      if (tiled) {
        EXPECT_TRUE(same_row(m.beta, j, w.beta, heads[j])) << arch;
      }
    }
    if (!tiled) {  // ssm_ba: key head 1's betas then alphas, rows 4 .. 7
      for (int64_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(same_row(m.beta_alpha, i, w.beta_alpha, 4 + i)) << arch;
      }
    }
    EXPECT_EQ(m.out.rows, c.n_embd / 2);  // ssm_out: its output rows over every head's columns
    EXPECT_EQ(m.out.cols, c.linear.value_dim());
    EXPECT_TRUE(same_row(m.out, 0, w.out, c.n_embd / 2)) << arch;
    EXPECT_EQ(half.split.rank_config(c).state_bytes_per_sequence() * 2,
              c.state_bytes_per_sequence());
  }
}

// Ranks that cannot hold whole key heads are refused, naming the count.
TEST(LinearAttentionTp, RanksThatDoNotDivideTheKeyHeadsAreRefused) {
  RandomModelSpec spec;
  spec.arch = "qwen35";
  spec.n_layer = 4;
  const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
  const gguf::GgufFile file = gguf::GgufFile::from_bytes(bytes, "q35");
  try {
    ModelWeights::from_gguf(file, ModelConfig::from_gguf(file), 0, 4);
    FAIL() << "4 ranks split 2 key heads";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 linear-attention key heads do not divide evenly"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kvforge
