// The layer walk (model/layer_walk.h) that forward() runs and the static plan
// compiler records: its steps in order, and the norm weights they name.
#include "model/layer_walk.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tiny_model.h"

namespace kvforge {
namespace {

using testing::tiny_model;

const char* name(LayerNorm n) {
  switch (n) {
    case LayerNorm::Attn:
      return "attn";
    case LayerNorm::AttnPost:
      return "attn_post";
    case LayerNorm::Ffn:
      return "ffn";
    case LayerNorm::FfnPost:
      break;
  }
  return "ffn_post";
}

// Writes down every step it is asked to take.
struct StepLog {
  std::vector<std::string> steps;
  void embed() { steps.push_back("embed"); }
  void norm(LayerNorm n, int l) { steps.push_back(std::string("norm ") + name(n) + at(l)); }
  void attention_input(int l) { steps.push_back("attention input" + at(l)); }
  void attend(int l) { steps.push_back("attend" + at(l)); }
  void attention_output(int l) { steps.push_back("attention output" + at(l)); }
  void linear_attention_block(int l) { steps.push_back("linear attention" + at(l)); }
  void residual_then_norm(LayerNorm post, int l, LayerNorm next, int next_layer) {
    steps.push_back(std::string("residual ") + name(post) + at(l) + ", norm " + name(next) +
                    at(next_layer));
  }
  void residual(LayerNorm post, int l) {
    steps.push_back(std::string("residual ") + name(post) + at(l));
  }
  void ffn_block(int l) { steps.push_back("ffn" + at(l)); }
  void output() { steps.push_back("output"); }
  static std::string at(int l) { return " " + std::to_string(l); }
};

TEST(LayerWalk, StepsInTheOrderOfATransformerBlock) {
  const auto model = tiny_model("llama", 2);
  StepLog log;
  walk_forward(*model, log);
  const std::vector<std::string> want = {
      "embed",
      "norm attn 0",
      "attention input 0",
      "attend 0",
      "attention output 0",
      "residual attn_post 0, norm ffn 0",
      "ffn 0",
      "residual ffn_post 0, norm attn 1",
      "attention input 1",
      "attend 1",
      "attention output 1",
      "residual attn_post 1, norm ffn 1",
      "ffn 1",
      "residual ffn_post 1",
      "output",
  };
  EXPECT_EQ(log.steps, want);
}

TEST(LayerWalk, NormWeightsAreTheLayersOwn) {
  const auto gemma = tiny_model("gemma2", 2);
  const LayerWeights& w = gemma->weights().layers[1];
  EXPECT_EQ(&layer_norm_weight(*gemma, LayerNorm::Attn, 1), &w.attn_norm);
  EXPECT_EQ(&layer_norm_weight(*gemma, LayerNorm::AttnPost, 1), &w.attn_post_norm);
  EXPECT_EQ(&layer_norm_weight(*gemma, LayerNorm::Ffn, 1), &w.ffn_norm);
  EXPECT_EQ(&layer_norm_weight(*gemma, LayerNorm::FfnPost, 1), &w.ffn_post_norm);
  EXPECT_FALSE(w.ffn_post_norm.empty());
  // Without post norms the weight is empty: the residual adds proj as it is.
  const auto llama = tiny_model("llama", 2);
  EXPECT_TRUE(layer_norm_weight(*llama, LayerNorm::AttnPost, 0).empty());
}

}  // namespace
}  // namespace kvforge
