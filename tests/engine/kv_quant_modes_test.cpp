// A quantized KV cache gives the same generation in every execution mode.
// Contiguous (SequenceRunner), paged (Engine, any block size, batched with
// other requests) and static (StaticRunner, fixed variants and a mask) all
// store the same self-contained head records (core/formats/kv_format.h) and
// read them through the same attention kernel, whose tiles are cut at absolute
// positions. So with int8 or q4 K/V the bound is exact: the same greedy
// tokens and the same logits bits in all three modes.
#include <gtest/gtest.h>

#include <map>

#include "engine_test_util.h"
#include "kv/paged_equals_alone.h"
#include "static_test_util.h"

namespace kvforge {
namespace kv_quant_modes_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

struct Case {
  const char* label;
  KvFormat kv;
};

class QuantizedKvModes : public ::testing::TestWithParam<Case> {};

// head_dim 32: q4 quantizes in groups of 32 along head_dim.
std::unique_ptr<Model> head_dim_32_model() {
  RandomModelSpec spec = testing::tiny_spec("llama", 7);
  spec.n_embd = 128;
  spec.n_ff = 256;
  return testing::make_test_model(spec);
}

TEST_P(QuantizedKvModes, GreedyTokensAndLogitsBitsAgreeAcrossContiguousPagedAndStatic) {
  const KvFormat kv = GetParam().kv;
  const auto model = head_dim_32_model();
  const StaticConfig config = testing::small_static_config(1, kv);
  ThreadPool pool(2);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 2));

  // Prompt lengths around the static chunk (8) and the variants (16/32/48/64).
  const std::vector<int32_t> lengths = {1, 7, 9, 17, 33};
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t len : lengths) prompts.push_back(testing::test_prompt(size_t(len), len));
  const int max_tokens = 24;  // every prompt crosses at least one variant boundary

  std::vector<testing::GreedyTrace> contiguous, fixed;
  for (const auto& prompt : prompts) {
    contiguous.push_back(testing::dynamic_greedy(*model, prompt, max_tokens - 1, 2, kv));
    fixed.push_back(testing::static_greedy(runner, 0, prompt, max_tokens - 1));
    runner.release(0);
  }
  for (int32_t block_size : {4, 16}) {
    SCOPED_TRACE("block size " + std::to_string(block_size));
    // Block size 4 splits every sequence over many blocks; the neighbours
    // share forward passes.
    const auto paged = testing::paged_greedy(*model, prompts, max_tokens, kv, block_size, 16);
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("prompt length " + std::to_string(lengths[i]));
      const testing::Trace& p = paged.at(i);
      ASSERT_EQ(p.tokens, contiguous[i].tokens);
      ASSERT_EQ(fixed[i].tokens, contiguous[i].tokens);
      ASSERT_EQ(p.logits.size(), contiguous[i].logits.size());
      for (size_t s = 0; s < p.logits.size(); ++s) {
        ASSERT_TRUE(testing::same_bits(p.logits[s], contiguous[i].logits[s])) << "step " << s;
        ASSERT_TRUE(testing::same_bits(fixed[i].logits[s], contiguous[i].logits[s]))
            << "step " << s;
      }
    }
  }
}

// The formats really quantize: the int8 run differs from the f32 run (else
// the test above would pass for a cache that ignored its format).
TEST(QuantizedKvModes, Int8LogitsDifferFromF32) {
  const auto model = head_dim_32_model();
  const auto prompt = testing::test_prompt(17, 17);
  const auto f32 = testing::dynamic_greedy(*model, prompt, 4, 2, {});
  const auto int8 = testing::dynamic_greedy(*model, prompt, 4, 2, {KvDtype::Int8, KvDtype::Int8});
  EXPECT_FALSE(testing::same_bits(f32.logits.back(), int8.logits.back()));
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedKvModes,
                         ::testing::Values(Case{"int8", {KvDtype::Int8, KvDtype::Int8}},
                                           Case{"q4", {KvDtype::Q4, KvDtype::Q4}},
                                           Case{"k_int8_v_q4", {KvDtype::Int8, KvDtype::Q4}}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.label);
                         });

}  // namespace kv_quant_modes_test
}  // namespace kvforge
