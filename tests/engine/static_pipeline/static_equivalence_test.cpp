// Static output equals dynamic output. The static pipeline runs the same
// kernels as the dynamic forward pass, matmul results do not depend on how
// many rows share a call, and attention with a mask keeping exactly [0, n)
// gives the bits of n_keys = n; so the bound is exact: logits must be equal
// bit for bit to SequenceRunner's, for every prompt length around the chunk
// size and through every variant boundary. Against the scalar reference
// (double accumulation) the bound is the oracle test's 1e-4.
#include <gtest/gtest.h>

#include <cmath>

#include "reference_forward.h"
#include "static_test_util.h"

namespace kvforge {
namespace {

using testing::dynamic_greedy;
using testing::GreedyTrace;
using testing::same_bits;
using testing::small_static_config;
using testing::static_greedy;
using testing::test_prompt;

struct Case {
  const char* label;
  const char* arch;
  GgmlType weights;
  KvFormat kv;
  int threads;
};

class StaticEqualsDynamic : public ::testing::TestWithParam<Case> {};

TEST_P(StaticEqualsDynamic, SameLogitsBitsForPromptLengthsAroundChunksAndVariantBoundaries) {
  const Case cs = GetParam();
  RandomModelSpec spec = testing::tiny_spec(cs.arch);
  spec.weight_type = cs.weights;
  const auto model = testing::make_test_model(spec);
  const StaticConfig config = small_static_config(1, cs.kv);
  ThreadPool pool(cs.threads);
  StaticRunner runner(*model, pool, compile_plans(*model, config, cs.threads));
  const int32_t chunk = config.prefill_chunk;
  // 1, chunk-1, chunk, chunk+1, several chunks, max_prompt_len; each decodes
  // to the capacity, through the variants 16/32/48/64.
  for (int32_t len : {1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5, config.max_prompt_len}) {
    SCOPED_TRACE("prompt length " + std::to_string(len));
    const std::vector<int32_t> prompt = test_prompt(size_t(len), len);
    const int steps = config.capacity() - len;
    const GreedyTrace want = dynamic_greedy(*model, prompt, steps, cs.threads, cs.kv);
    const GreedyTrace got = static_greedy(runner, 0, prompt, steps);
    ASSERT_EQ(got.tokens, want.tokens);
    for (size_t i = 0; i < want.logits.size(); ++i)
      ASSERT_TRUE(same_bits(got.logits[i], want.logits[i])) << "step " << i;
    EXPECT_EQ(runner.length(0), config.capacity());
    EXPECT_EQ(runner.last_variant(), config.capacity());
    runner.release(0);
  }
  // Every variant ran: short prompts start in 16 and climb to 64.
  for (uint64_t steps : runner.steps_per_variant()) EXPECT_GT(steps, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Models, StaticEqualsDynamic,
    ::testing::Values(
        Case{"llama_f32", "llama", GgmlType::F32, {}, 1},
        Case{"llama_f32_3threads", "llama", GgmlType::F32, {}, 3},
        Case{"qwen2_f32", "qwen2", GgmlType::F32, {}, 2},
        Case{"llama_q8_0_kv_f16", "llama", GgmlType::Q8_0, {KvDtype::F16, KvDtype::F16}, 2},
        Case{"llama_f32_k_f16_v_f32", "llama", GgmlType::F32, {KvDtype::F16, KvDtype::F32}, 1}),
    [](const auto& param_info) { return std::string(param_info.param.label); });

TEST(StaticPipeline, MatchesScalarReferenceWithin1e4) {
  const auto model = testing::make_test_model(testing::tiny_spec("llama", 5));
  const StaticConfig config = small_static_config();
  ThreadPool pool(2);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 2));
  testing::ReferenceForward ref(*model, config.capacity());
  const std::vector<int32_t> prompt = test_prompt(13);
  std::vector<float> want;
  for (size_t i = 0; i < prompt.size(); ++i) want = ref.forward(prompt[i], int32_t(i));
  std::span<const float> got = runner.prefill(0, prompt);
  for (int32_t pos = int32_t(prompt.size());; ++pos) {
    float diff = 0;
    for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(got[i] - want[i]));
    ASSERT_LE(diff, 1e-4f) << "position " << pos;
    if (pos == config.capacity()) break;
    const int32_t token = testing::argmax(got);
    ASSERT_EQ(token, testing::argmax(want)) << "position " << pos;
    want = ref.forward(token, pos);
    got = runner.decode_one(0, token);
  }
}

TEST(StaticPipeline, DefaultConfigurationHoldsTheIssueNumbers) {
  const StaticConfig c;
  EXPECT_EQ(c.capacity(), 1152);
  EXPECT_EQ(c.prefill_chunk, 256);
  EXPECT_EQ(c.generate_variants, (std::vector<int32_t>{256, 512, 1024, 1152}));
  EXPECT_NO_THROW(c.validate());
}

TEST(StaticPipeline, InvalidConfigurationsNameTheField) {
  const auto expect_error = [](StaticConfig c, const char* needle) {
    try {
      c.validate();
      ADD_FAILURE() << "accepted: " << c.describe();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  StaticConfig c;
  c.prefill_chunk = 100;
  expect_error(c, "power of two");
  c = {};
  c.generate_variants = {256, 1024, 512, 1152};
  expect_error(c, "ascending");
  c = {};
  c.generate_variants = {256, 512};
  expect_error(c, "must end at the capacity");
  c = {};
  c.max_prompt_len = 0;
  expect_error(c, "max_prompt_len");
  c = {};
  c.slots = 0;
  expect_error(c, "slots");
  EXPECT_THROW(parse_variant_list("256,,512"), std::invalid_argument);
  EXPECT_EQ(parse_variant_list("16,32"), (std::vector<int32_t>{16, 32}));
}

}  // namespace
}  // namespace kvforge
