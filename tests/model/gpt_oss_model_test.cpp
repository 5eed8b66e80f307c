// What a gpt-oss file gives the model (the features of llama.cpp's
// openai-moe), and what it refuses by name: keys and tensors kvforge does not
// read, a file without its sliding window (tensor parallelism: moe_ffn_test).
// The logits are held to llama.cpp in gpt_oss_golden_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "edited_model.h"
#include "model/model.h"
#include "test_models.h"

namespace kvforge {
namespace {

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

RandomModelSpec gpt_oss_spec() {
  RandomModelSpec spec;
  spec.arch = "gpt-oss";
  spec.sliding_window = 6;
  spec.head_dim = 32;
  return spec;
}

TEST(GptOssModel, ReadsSinksBiasesRoutingAndWindows) {
  const auto model = testing::make_test_model(gpt_oss_spec());
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, Architecture::GptOss);
  EXPECT_TRUE(c.attn_sinks);
  EXPECT_TRUE(c.attn_output_bias);
  EXPECT_EQ(c.ffn_act, FfnActivation::SwigluOai);
  EXPECT_EQ(c.moe.gating, ExpertGating::TopKThenSoftmax);
  EXPECT_FALSE(c.moe.norm_topk);
  EXPECT_EQ(c.window(0), 6);  // even layers windowed (llama.cpp's default pattern 2)
  EXPECT_EQ(c.window(1), 0);
  const LayerWeights& l = model->weights().layers[1];
  EXPECT_EQ(l.attn_sinks.size(), size_t(c.n_head));
  EXPECT_EQ(l.bias_o.size(), size_t(c.n_embd));
  EXPECT_EQ(l.bias_q.size(), size_t(c.q_dim()));
  EXPECT_EQ(l.moe.router_bias.size(), size_t(c.moe.n_expert));
  EXPECT_EQ(l.moe.gate_bias.size(), size_t(c.moe.n_expert * c.moe.n_ff_exp));
  EXPECT_EQ(l.moe.up_bias.size(), size_t(c.moe.n_expert * c.moe.n_ff_exp));
  EXPECT_EQ(l.moe.down_bias.size(), size_t(c.moe.n_expert * c.n_embd));
}

// make-model's gpt-oss states gpt-oss's window, 128, when given none.
TEST(GptOssModel, RandomFilesHaveGptOssWindowByDefault) {
  RandomModelSpec spec;
  spec.arch = "gpt-oss";
  EXPECT_EQ(testing::make_test_model(spec)->config().window(0), 128);
}

// llama.cpp's openai-moe reads none of these: a file stating them would be
// computed as if they were absent, so it is refused naming the key.
TEST(GptOssModel, KeysItDoesNotReadAreRefusedByName) {
  for (const char* key :
       {"gpt-oss.expert_weights_scale", "gpt-oss.expert_shared_count",
        "gpt-oss.expert_weights_norm", "gpt-oss.rope.scaling.yarn_log_multiplier"}) {
    const std::string what = load_error(edited_model(
        gpt_oss_spec(), [key](gguf::GgufWriter& w) { w.set(key, gguf::Value::f32(2.0f)); }));
    expect_mentions(what, {key, "kvforge does not implement it for gpt-oss"});
  }
}

TEST(GptOssModel, ATensorItDoesNotReadIsRefusedByName) {
  const std::string what = load_error(edited_model(
      gpt_oss_spec(), [](gguf::GgufWriter&) {}, "blk.0.ffn_gate_shexp.weight"));
  expect_mentions(what, {"blk.0.ffn_gate_shexp.weight", "is not used by kvforge's gpt-oss model"});
}

// llama.cpp requires attention.sliding_window for gpt-oss.
TEST(GptOssModel, AFileWithoutItsWindowIsRefused) {
  const gguf::GgufFile src =
      gguf::GgufFile::from_bytes(make_random_model(gpt_oss_spec()).to_bytes());
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata())
    if (kv.key != "gpt-oss.attention.sliding_window") out.set(kv.key, kv.value);
  for (const gguf::TensorInfo& t : src.tensors()) {
    const auto data = src.tensor_data(t);
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data.begin(), data.end()));
  }
  const std::string what = load_error(gguf::GgufFile::from_bytes(out.to_bytes(), "no-window"));
  expect_mentions(what, {"missing required key 'gpt-oss.attention.sliding_window'"});
}

}  // namespace
}  // namespace kvforge
