// gpt-oss on the static pipeline: attention sinks in both kinds of layer
// (windowed layers through attend_queries over the window, full layers over
// exactly [0, pos] since the masked kernel has no sink term), the mixture of
// experts with its biases and clamp, YaRN. Static logits must equal the
// dynamic ones bit for bit, on the llama.cpp golden files (f32 and MXFP4
// experts) and on a random file with quantized KV and two slots.
#include <gtest/gtest.h>

#include <filesystem>

#include "static_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::dynamic_greedy;
using testing::expect_same_traces;
using testing::GreedyTrace;
using testing::same_bits;
using testing::static_greedy;
using testing::test_prompt;

// Windows of 8 on layers 0 and 2, sinks on every layer (data/gpt_oss/README.md):
// a prompt of 17 in chunks of 8, then through every variant to the capacity.
TEST(StaticGptOss, GoldenFilesRunStaticallyWithTheDynamicBits) {
  const auto dir = testing::source_dir() / "tests/model/data/gpt_oss";
  for (const char* name : {"gpt-oss-f32.gguf", "gpt-oss-mxfp4_moe.gguf"}) {
    SCOPED_TRACE(name);
    const auto model = Model::load(dir / name);
    ASSERT_TRUE(model->config().attn_sinks);
    StaticConfig config;
    config.max_prompt_len = 24;
    config.min_response_len = 24;
    config.prefill_chunk = 8;
    config.generate_variants = {16, 32, 48};
    ThreadPool pool(2);
    StaticRunner runner(*model, pool, compile_plans(*model, config, 2));
    const std::vector<int32_t> prompt = test_prompt(17, 3);
    const GreedyTrace want = dynamic_greedy(*model, prompt, 30, 2, {}, config.capacity());
    expect_same_traces(static_greedy(runner, 0, prompt, 30), want);
  }
}

RandomModelSpec gpt_oss_spec() {
  RandomModelSpec spec = testing::tiny_spec("gpt-oss", 5);
  spec.sliding_window = 6;
  spec.head_dim = 32;  // 4-bit KV groups hold 32 values
  return spec;
}

// Int8 and 4-bit KV records under the sinks, two slots decoding together.
TEST(StaticGptOss, QuantizedKvAndTwoSlotsEqualDynamic) {
  const auto model = testing::make_test_model(gpt_oss_spec());
  for (const KvFormat kv :
       {KvFormat{KvDtype::Int8, KvDtype::Int8}, KvFormat{KvDtype::Q4, KvDtype::F16}}) {
    const StaticConfig config = testing::small_static_config(2, kv);
    ThreadPool pool(3);
    StaticRunner runner(*model, pool, compile_plans(*model, config, 3));
    const std::vector<int32_t> a = test_prompt(19, 1), b = test_prompt(5, 2);
    const GreedyTrace want_a = dynamic_greedy(*model, a, 10, 3, kv, config.capacity());
    const GreedyTrace want_b = dynamic_greedy(*model, b, 10, 3, kv, config.capacity());
    std::vector<int32_t> ta{testing::argmax(runner.prefill(0, a))};
    std::vector<int32_t> tb{testing::argmax(runner.prefill(1, b))};
    const size_t n_vocab = size_t(model->config().n_vocab);
    for (int i = 0; i < 10; ++i) {
      const std::vector<int32_t> step = {ta.back(), tb.back()};
      const std::span<const float> logits = runner.decode(step);
      ASSERT_TRUE(same_bits(logits.first(n_vocab), want_a.logits[size_t(i) + 1])) << i;
      ASSERT_TRUE(same_bits(logits.subspan(n_vocab, n_vocab), want_b.logits[size_t(i) + 1])) << i;
      ta.push_back(testing::argmax(logits.first(n_vocab)));
      tb.push_back(testing::argmax(logits.subspan(n_vocab, n_vocab)));
    }
    EXPECT_EQ(ta, want_a.tokens);
    EXPECT_EQ(tb, want_b.tokens);
  }
}

}  // namespace
}  // namespace kvforge
